// The LRA reference settings end to end (manifests/reference-mixers/): a run
// with a built-in mixer records the table and applies its task's entry, the
// user's --set wins and shows up as changed, a third-party plugin (or a copy
// of a built-in from elsewhere) gets none, `suite` inherits it through its
// child runs, and the leaderboard marks which entries used the settings.
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "common/sha256.h"
#include "results/result.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

// A tiny smoke ListOps run of `plugin` (name or path) with extra arguments.
Outcome tiny_run(const std::string& data, const fs::path& out, const std::string& plugin, const std::string& extra = "") {
  return lrahost(replace_once(tiny_run_args(data, out.string()), "--plugin transformer", "--plugin " + plugin) + extra);
}

json result_of(const fs::path& run) { return json::parse(read_text(run / "result.json")); }

std::string table_sha256() {
  return lra::host::sha256_hex(read_text(fs::path(LRA_SOURCE_DIR) / "manifests/reference-mixers/lra-v1.3.toml"));
}

// Each test in its own folder (ctest runs every test as its own process).
class ReferenceCli : public ::testing::Test {
 protected:
  std::string data() const { return dir_.str() + "/data"; }
  fs::path path(const std::string& name) const { return dir_.path() / name; }
  TempDir dir_;
};

TEST_F(ReferenceCli, RunAppliesAndRecordsTheTaskEntry) {
  auto o = tiny_run(data(), path("ref"), "performer");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("mixer options: LRA reference settings performer/smoke/listops from "
                          "reference-mixers/lra-v1.3.toml"),
            std::string::npos)
      << o.output;
  const json r = result_of(path("ref"));
  const json& p = r["plugin"];
  // LRA's ListOps Performer: FAVOR+ softmax, 2 features, redrawn (the plugin's default is 256, fixed).
  EXPECT_EQ(p["options"]["kernel"], "softmax");
  EXPECT_EQ(p["options"]["nb_features"], 2);
  EXPECT_EQ(p["options"]["redraw"], 1);
  const json& rs = p["reference_settings"];
  EXPECT_EQ(rs["table"], "reference-mixers/lra-v1.3.toml");
  EXPECT_EQ(rs["sha256"], table_sha256());
  EXPECT_EQ(rs["entry"], "performer/smoke/listops");
  EXPECT_EQ(rs["used"], true);
  EXPECT_EQ(rs["changed"], json::array());
  EXPECT_EQ(rs["applied"], json({"nb_features", "redraw"}));
  EXPECT_EQ(rs["settings"], json({{"kernel", "softmax"}, {"mask_keys", true}, {"nb_features", 2}, {"redraw", 1}}));
  EXPECT_EQ(r["division"], "open") << "the smoke preset; mixer options never decide the division";
  // The result still verifies (the new field is sealed with the rest).
  auto v = lrahost("verify " + (path("ref") / "result.json").string());
  EXPECT_EQ(v.code, 0) << v.output;
}

TEST_F(ReferenceCli, UserSetWinsAndShowsUpAsChanged) {
  auto o = tiny_run(data(), path("set"), "performer", " --set mixer.nb_features=4 --set mixer.chunk=16");
  ASSERT_EQ(o.code, 0) << o.output;
  const json p = result_of(path("set"))["plugin"];
  EXPECT_EQ(p["options"]["nb_features"], 4);   // --set on top of the table
  EXPECT_EQ(p["options"]["kernel"], "softmax");  // the table where --set is silent
  EXPECT_EQ(p["options"]["chunk"], 16);
  EXPECT_EQ(p["reference_settings"]["changed"], json({"nb_features"})) << "chunk is compute-only";
  EXPECT_EQ(p["reference_settings"]["used"], false);
  EXPECT_NE(o.output.find("changed by --set: nb_features"), std::string::npos) << o.output;
}

TEST_F(ReferenceCli, ThirdPartyPluginsGetNone) {
  auto fixture = tiny_run(data(), path("fixture"), fixture_plugin("fixture_ballast"), " --set mixer.ballast=0");
  ASSERT_EQ(fixture.code, 0) << fixture.output;
  EXPECT_TRUE(result_of(path("fixture"))["plugin"]["reference_settings"].is_null());
  EXPECT_EQ(fixture.output.find("LRA reference settings"), std::string::npos) << fixture.output;

  // The built-in performer's own bytes, loaded from another folder: not the host's plugin.
  const fs::path copy = path("elsewhere") / "lra_mixer_performer.so";
  fs::create_directories(copy.parent_path());
  const auto& builtin = fs::path(LRAHOST_BIN).parent_path().parent_path() / "lib/lrahost/plugins/lra_mixer_performer.so";
  fs::copy_file(builtin, copy, fs::copy_options::overwrite_existing);
  auto o = tiny_run(data(), path("copy"), copy.string());
  ASSERT_EQ(o.code, 0) << o.output;
  const json p = result_of(path("copy"))["plugin"];
  EXPECT_EQ(p["name"], "performer");
  EXPECT_TRUE(p["reference_settings"].is_null());
  EXPECT_EQ(p["options"]["nb_features"], 256) << "the plugin's own default, not LRA's";
}

// Release lra-v1.3: the manifest names the table a run applies. local runs
// with LRA's masked query rows under it; --set rules.reference_settings
// naming lra-v1.2's table (what every earlier release runs with) turns them
// off, and that honest result verifies too. A result whose recorded table is
// not the one its config names is invalid, even re-sealed.
TEST_F(ReferenceCli, TheManifestNamesTheTableAndVerifyHoldsTheResultToIt) {
  auto now = tiny_run(data(), path("now"), "local");
  ASSERT_EQ(now.code, 0) << now.output;
  json r = result_of(path("now"));
  EXPECT_EQ(r["config"]["rules"]["reference_settings"], "reference-mixers/lra-v1.3.toml");
  EXPECT_EQ(r["plugin"]["options"]["mask_queries"], true);
  EXPECT_EQ(r["plugin"]["reference_settings"]["table"], "reference-mixers/lra-v1.3.toml");
  EXPECT_EQ(r["plugin"]["reference_settings"]["used"], true);

  auto before = tiny_run(data(), path("before"), "local",
                         " --set rules.reference_settings=reference-mixers/lra-v1.2.toml");
  ASSERT_EQ(before.code, 0) << before.output;
  const json b = result_of(path("before"));
  EXPECT_EQ(b["plugin"]["options"]["mask_queries"], false);
  EXPECT_EQ(b["plugin"]["reference_settings"]["table"], "reference-mixers/lra-v1.2.toml");
  auto vb = lrahost("verify " + (path("before") / "result.json").string());
  EXPECT_EQ(vb.code, 0) << vb.output;

  // The lra-v1.3 run claiming lra-v1.2's table (and its bytes), re-sealed.
  r["plugin"]["reference_settings"]["table"] = "reference-mixers/lra-v1.2.toml";
  r["plugin"]["reference_settings"]["sha256"] = b["plugin"]["reference_settings"]["sha256"];
  r.erase("digest");
  lra::host::write_result(path("forged"), lra::host::seal(r));
  auto vf = lrahost("verify " + (path("forged") / "result.json").string());
  EXPECT_EQ(vf.code, 4) << vf.output;
  EXPECT_NE(vf.output.find("plugin.reference_settings.table is \"reference-mixers/lra-v1.2.toml\", but the manifest "
                           "as run (config.rules.reference_settings) names \"reference-mixers/lra-v1.3.toml\""),
            std::string::npos)
      << vf.output;

  // A name that is no settings table: refused before anything runs, naming the key.
  auto bad = tiny_run(data(), path("bad"), "local", " --set rules.reference_settings=reference-mixers/lra-v9.toml");
  EXPECT_EQ(bad.code, 4) << bad.output;
  EXPECT_NE(bad.output.find("rules.reference_settings"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(path("bad") / "result.json"));
}

// The state-space mixers are built in but not LRA's: `run` trains them with
// their own defaults (conformance checked first), records no reference
// settings and keeps every option in the result.
TEST_F(ReferenceCli, BuiltinStateSpaceMixersRunWithTheirDefaults) {
  for (const std::string name : {"s4d", "mamba2"}) {
    SCOPED_TRACE(name);
    auto o = tiny_run(data(), path(name), name);
    ASSERT_EQ(o.code, 0) << o.output;
    EXPECT_NE(o.output.find("conformance checks passed: shape, finite, deterministic, padding_mask, causal"),
              std::string::npos)
        << o.output;
    EXPECT_EQ(o.output.find("LRA reference settings"), std::string::npos) << o.output;
    const json r = result_of(path(name));
    EXPECT_EQ(r["plugin"]["name"], name);
    EXPECT_TRUE(r["plugin"]["reference_settings"].is_null());
    EXPECT_EQ(r["plugin"]["options"]["d_state"], 0) << "0 = the automatic state size, recorded as given";
    EXPECT_GT(r["metrics"]["test_accuracy"].get<double>(), 0.0);
  }
}

TEST_F(ReferenceCli, SuiteRunsInheritItAndTheLeaderboardMarksIt) {
  const fs::path out = path("suite");
  auto s = lrahost("suite --plugin performer --tasks listops --seeds 0 --preset smoke --threads 1 --data-dir " +
                   data() + " --out " + out.string() + tiny_sets());
  ASSERT_EQ(s.code, 0) << s.output;
  const json summary = json::parse(read_text(out / "suite.json"));
  ASSERT_EQ(summary["runs"].size(), 1u);
  const json r = result_of(out / summary["runs"][0]["run_dir"].get<std::string>());
  EXPECT_EQ(r["plugin"]["reference_settings"]["entry"], "performer/smoke/listops");
  EXPECT_EQ(r["plugin"]["reference_settings"]["used"], true);
  ASSERT_EQ(summary["scores"].size(), 1u);
  EXPECT_EQ(summary["scores"][0]["reference_settings"]["used"], true);

  // The suite's run (reference settings) and a --set run (not), on one page.
  auto o = tiny_run(data(), path("set"), "performer", " --set mixer.nb_features=4");
  ASSERT_EQ(o.code, 0) << o.output;
  const fs::path site = path("site");
  auto b = lrahost("leaderboard " + (out / "runs").string() + " " + (path("set") / "result.json").string() +
                   " --out " + site.string());
  ASSERT_EQ(b.code, 0) << b.output;
  const std::string md = read_text(site / "leaderboard.md");
  EXPECT_NE(md.find("performer 1.1.0"), std::string::npos) << md;
  EXPECT_NE(md.find("✓ LRA reference settings"), std::string::npos) << md;
  EXPECT_NE(md.find("✗ not the LRA reference settings (listops: nb_features)"), std::string::npos) << md;
  const std::string html = read_text(site / "index.html");
  EXPECT_NE(html.find("class=\"refset yes\""), std::string::npos);
  EXPECT_NE(html.find("class=\"refset no\""), std::string::npos);
  const json j = json::parse(read_text(site / "leaderboard.json"));
  int used = 0, not_used = 0;
  for (const auto& e : j["open"]) {
    ASSERT_TRUE(e["reference_settings"].is_object()) << e.dump();
    (e["reference_settings"]["used"] == true ? used : not_used)++;
  }
  EXPECT_EQ(used, 1);
  EXPECT_EQ(not_used, 1);
}

}  // namespace
}  // namespace lra::test
