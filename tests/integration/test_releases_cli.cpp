// Frozen official manifests through the binary: a result produced under an
// older release keeps verifying as closed and is named by its release; a run
// records the release of the manifest it used.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_run.h"

using lra::test::lrahost;
using lra::test::read_text;
using lra::test::TempDir;
using lra::test::tiny_run_args;
using nlohmann::json;

// docs/measured/: our own official ListOps run on an H100, made under lra-v1.0
// (before rules.seeds was added). It must verify as closed for good.
TEST(ReleasesCli, TheMeasuredListOpsResultVerifiesUnderItsRelease) {
  const std::string file = std::string(LRA_SOURCE_DIR) + "/docs/measured/listops-official-transformer-h100.result.json";
  auto v = lrahost("verify " + file);
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("closed (release lra-v1.0, superseded by lra-v1.3), valid"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("submission (1 result): closed, valid"), std::string::npos) << v.output;
}

// docs/measured/: the official ListOps run on an H200 under lra-v1.2 (one seed,
// fused optimizer step, resumed once with --resume). The result is closed and
// valid, so verify exits 0 (issue 46: it said INVALID about a valid result);
// alone it is an incomplete submission (rules.seeds asks for 0, 1, 2), which
// verify reports and --submission makes the verdict.
TEST(ReleasesCli, TheMeasuredH200ListOpsResultVerifiesClosedUnderLraV12) {
  const std::string file = std::string(LRA_SOURCE_DIR) + "/docs/measured/listops-official-transformer-h200.result.json";
  auto v = lrahost("verify " + file);
  EXPECT_NE(v.output.find("listops-official-transformer-h200.result.json: closed (release lra-v1.2, superseded by lra-v1.3), valid"),
            std::string::npos)
      << v.output;
  EXPECT_EQ(v.code, 0) << "a valid result verifies: " << v.output;
  EXPECT_EQ(v.output.find("INVALID"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("submission (1 result): not valid as one leaderboard submission, for information"),
            std::string::npos)
      << v.output;
  EXPECT_NE(v.output.find("seeds incomplete: missing 1, 2 of 0, 1, 2"), std::string::npos) << v.output;

  auto s = lrahost("verify --submission " + file);
  EXPECT_EQ(s.code, 4) << "an incomplete submission does not verify as one: " << s.output;
  EXPECT_NE(s.output.find("submission (1 result): open, INVALID"), std::string::npos) << s.output;  // closed only when valid
  EXPECT_NE(s.output.find("seeds incomplete: missing 1, 2 of 0, 1, 2"), std::string::npos) << s.output;

  // The H100 run under lra-v1.0 (whose seeds are [0]) is a complete submission alone.
  const std::string whole = std::string(LRA_SOURCE_DIR) + "/docs/measured/listops-official-transformer-h100.result.json";
  auto w = lrahost("verify --submission " + whole);
  EXPECT_EQ(w.code, 0) << w.output;
  EXPECT_NE(w.output.find("submission (1 result): closed, valid"), std::string::npos) << w.output;

  // --submission judges result files; a bundle's runs are judged one by one.
  auto u = lrahost("verify --submission --reevaluate " + file);
  EXPECT_EQ(u.code, 2) << u.output;
}

// An open run under a released manifest still names the release of its bytes;
// a smoke manifest is no release.
TEST(ReleasesCli, RunsRecordTheReleaseTheirManifestBelongsTo) {
  TempDir dir;
  auto o = lrahost(tiny_run_args(dir.str() + "/data", dir.str() + "/smoke"));
  ASSERT_EQ(o.code, 0) << o.output;
  json r = json::parse(read_text(dir.path() / "smoke" / "result.json"));
  EXPECT_TRUE(r["task"]["manifest_release"].is_null()) << r["task"].dump();
  EXPECT_EQ(r["config"]["model"]["padding_mask"], "length");

  // The lra-v1.0 ListOps manifest, made tiny by overrides: open, but its release is known.
  const std::string old = std::string(LRA_SOURCE_DIR) + "/manifests/released/lra-v1.0/listops.toml";
  auto args = tiny_run_args(dir.str() + "/data", dir.str() + "/old");
  args.replace(args.find("--preset smoke"), 14, "--manifest " + old);
  o = lrahost(args);
  ASSERT_EQ(o.code, 0) << o.output;
  r = json::parse(read_text(dir.path() / "old" / "result.json"));
  EXPECT_EQ(r["task"]["manifest_release"], "lra-v1.0");
  EXPECT_EQ(r["division"], "open");  // the overrides make it open
  auto v = lrahost("verify " + (dir.path() / "old").string());
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("open, valid"), std::string::npos) << v.output;
}
