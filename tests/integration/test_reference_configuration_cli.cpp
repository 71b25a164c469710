// `run --reference table1` end to end: the run is open and labelled, its
// settings and options are what LRA ran, verify names the configuration and
// recomputes every part of the record (a forged one is invalid, an honest one
// with --set on top stays valid and says what changed), a plugin or name the
// configuration does not cover is exit 2 with nothing written, bench predicts
// the same runs, and the leaderboard keeps one entry across tasks.
#include <filesystem>
#include <functional>
#include <vector>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "results/result.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

json result_of(const fs::path& run) { return json::parse(read_text(run / "result.json")); }

class ReferenceConfigurationCli : public ::testing::Test {
 protected:
  std::string data() const { return dir_.str() + "/data"; }
  fs::path path(const std::string& name) const { return dir_.path() / name; }
  // A tiny smoke ListOps run of a built-in mixer under the Table 1 configuration.
  Outcome table1_run(const std::string& plugin, const std::string& out, const std::string& extra = "") {
    return lrahost(replace_once(tiny_run_args(data(), path(out).string()), "--plugin transformer",
                                "--plugin " + plugin + " --reference table1") +
                   extra);
  }
  Outcome verify(const fs::path& file) { return lrahost("verify " + file.string()); }
  TempDir dir_;
};

TEST_F(ReferenceConfigurationCli, RunIsOpenLabelledAndVerifiesNamingIt) {
  auto o = table1_run("sinkhorn", "sinkhorn");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(has(o.output, "configuration          LRA Table 1 configuration 1.2 "
                            "(reference-configurations/lra-table1.2.toml, entry sinkhorn/listops)"))
      << o.output;
  const json r = result_of(path("sinkhorn"));
  EXPECT_EQ(r["division"], "open");
  EXPECT_TRUE(has(r["division_reasons"][0].get<std::string>(), "LRA Table 1 configuration")) << r["division_reasons"];
  EXPECT_TRUE(has(r["division_reasons"].dump(), "--reference table1 sets model.pooling=mean_padded"));
  EXPECT_EQ(r["config"]["model"]["pooling"], "mean_padded") << "LRA's MEAN over every position, padding included";
  const json& c = r["reference_configuration"];
  EXPECT_EQ(c["name"], "table1");
  EXPECT_EQ(c["label"], "LRA Table 1 configuration 1.2");
  EXPECT_EQ(c["entry"], "sinkhorn/listops");
  EXPECT_EQ(c["settings"], json({{"mixer.mask_queries", true},
                                 {"model.pooling", "mean_padded"},
                                 {"rules.param_budget_ratio", 1000.0}}));
  EXPECT_EQ(r["plugin"]["options"]["mask_queries"], true) << "LRA's masked query rows (issue 46)";
  EXPECT_EQ(c["changed"], json::array());
  auto v = verify(path("sinkhorn") / "result.json");
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_TRUE(has(v.output, "open, valid")) << v.output;
  EXPECT_TRUE(has(v.output, "configuration: LRA Table 1 configuration 1.2 (reference-configurations/lra-table1.2.toml, "
                            "entry sinkhorn/listops)"))
      << v.output;
  // The first version stays runnable by its number, and its results verify naming it.
  auto first = lrahost(replace_once(tiny_run_args(data(), path("first").string()), "--plugin transformer",
                                    "--plugin sinkhorn --reference table1.0"));
  ASSERT_EQ(first.code, 0) << first.output;
  const json f = result_of(path("first"));
  EXPECT_EQ(f["reference_configuration"]["label"], "LRA Table 1 configuration");
  // 1.0 does not name mask_queries: the table the manifest names decides it,
  // true since release lra-v1.3 (LRA's masked query rows in the closed division).
  EXPECT_EQ(f["plugin"]["options"]["mask_queries"], true);
  EXPECT_EQ(f["plugin"]["reference_settings"]["table"], "reference-mixers/lra-v1.3.toml");
  auto vf = verify(path("first") / "result.json");
  EXPECT_EQ(vf.code, 0) << vf.output;
  EXPECT_TRUE(has(vf.output, "configuration: LRA Table 1 configuration (reference-configurations/lra-table1.toml, "
                             "entry sinkhorn/listops)"))
      << vf.output;
  // A run without --reference names none.
  auto plain = lrahost(replace_once(tiny_run_args(data(), path("plain").string()), "--plugin transformer",
                                    "--plugin sinkhorn"));
  ASSERT_EQ(plain.code, 0) << plain.output;
  EXPECT_FALSE(result_of(path("plain")).contains("reference_configuration"));
  EXPECT_FALSE(has(verify(path("plain") / "result.json").output, "configuration:"));
}

// LRA's unmasked keys: the option is set, and the padding check that it fails
// by design is not run, saying so (without the configuration it refuses the run).
TEST_F(ReferenceConfigurationCli, LinformerRunsUnmaskedAndLearnedAsLraDid) {
  auto o = table1_run("linformer", "linformer");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(has(o.output, "conformance check padding_mask not run: LRA Table 1 configuration")) << o.output;
  const json r = result_of(path("linformer"));
  EXPECT_EQ(r["plugin"]["options"]["mask_keys"], false);
  EXPECT_EQ(r["plugin"]["options"]["projection"], "learned");
  EXPECT_EQ(r["reference_configuration"]["conformance_not_checked"], json({"padding_mask"}));
  EXPECT_EQ(verify(path("linformer") / "result.json").code, 0);
  auto refused = lrahost(replace_once(tiny_run_args(data(), path("unmasked").string()), "--plugin transformer",
                                      "--plugin linformer --set mixer.mask_keys=false"));
  EXPECT_EQ(refused.code, 3) << refused.output;
  EXPECT_TRUE(has(refused.output, "padding_mask")) << refused.output;
  EXPECT_FALSE(fs::exists(path("unmasked") / "result.json"));
}

TEST_F(ReferenceConfigurationCli, SetOnTopIsRecordedAsChangedAndStaysValid) {
  auto o = table1_run("sinkhorn", "changed", " --set model.pooling=mean");
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = result_of(path("changed"));
  EXPECT_EQ(r["config"]["model"]["pooling"], "mean") << "the user's --set wins";
  EXPECT_EQ(r["reference_configuration"]["changed"], json({"model.pooling"}));
  auto v = verify(path("changed") / "result.json");
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_TRUE(has(v.output, "changed by --set: model.pooling")) << v.output;
}

// verify trusts no part of the record it can recompute: each forgery, re-sealed
// so that only the configuration check can catch it, is invalid naming it.
TEST_F(ReferenceConfigurationCli, ForgedRecordsAreInvalid) {
  ASSERT_EQ(table1_run("sinkhorn", "honest").code, 0);
  const json honest = result_of(path("honest"));
  struct Forgery {
    std::string name, reason;
    std::function<void(json&)> edit;
  };
  const std::vector<Forgery> forgeries = {
      {"settings", "settings", [](json& r) { r["reference_configuration"]["settings"]["model.pooling"] = "cls"; }},
      {"entry", "entry", [](json& r) { r["reference_configuration"]["entry"] = "local/listops"; }},
      {"changed", "changed",
       [](json& r) {  // the config differs from the entry, the record says it does not
         r["config"]["model"]["pooling"] = "mean";
       }},
      {"table", "not a reference configuration",
       [](json& r) { r["reference_configuration"]["table"] = "reference-configurations/lra-table9.toml"; }},
      {"sha256", "sha256", [](json& r) { r["reference_configuration"]["sha256"] = std::string(64, '0'); }},
      {"plugin", "no entry", [](json& r) { r["plugin"]["name"] = "s4d"; }},
      {"closed", "is open", [](json& r) { r["division"] = "closed"; }},
  };
  for (const auto& f : forgeries) {
    SCOPED_TRACE(f.name);
    json forged = honest;
    f.edit(forged);
    forged.erase("digest");
    const fs::path dir = path("forged-" + f.name);
    lra::host::write_result(dir, lra::host::seal(forged));
    auto v = verify(dir / "result.json");
    EXPECT_NE(v.code, 0) << v.output;
    EXPECT_TRUE(has(v.output, "INVALID")) << v.output;
    EXPECT_TRUE(has(v.output, "reference_configuration")) << v.output;
    EXPECT_TRUE(has(v.output, f.reason)) << v.output;
  }
  // The honest file, re-sealed the same way, still passes (the check is not a digest check).
  json same = honest;
  same.erase("digest");
  lra::host::write_result(path("resealed"), lra::host::seal(same));
  EXPECT_EQ(verify(path("resealed") / "result.json").code, 0);
}

TEST_F(ReferenceConfigurationCli, WhatItDoesNotCoverIsAUsageError) {
  auto unknown = lrahost(replace_once(tiny_run_args(data(), path("unknown").string()), "--plugin transformer",
                                     "--plugin sinkhorn --reference table7"));
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  EXPECT_TRUE(has(unknown.output, "unknown reference configuration 'table7'")) << unknown.output;
  auto ssm = table1_run("s4d", "ssm");
  EXPECT_EQ(ssm.code, 2) << ssm.output;
  EXPECT_TRUE(has(ssm.output, "is not one of them")) << ssm.output;
  auto fixture = table1_run(fixture_plugin("fixture_ballast"), "fixture", " --set mixer.ballast=0");
  EXPECT_EQ(fixture.code, 2) << fixture.output;
  for (const char* out : {"unknown", "ssm", "fixture"}) EXPECT_FALSE(fs::exists(path(out))) << out;
}

TEST_F(ReferenceConfigurationCli, BenchPredictsTheConfigurationsRuns) {
  const fs::path out = path("bench");
  auto b = lrahost("bench --task listops --preset smoke --plugins sinkhorn --reference table1 --steps 1 --repeats 1 "
                   "--warmup 0 --threads 1 --device cpu --out " + out.string());
  ASSERT_EQ(b.code, 0) << b.output;
  const json j = json::parse(read_text(out / "bench.json"));
  const json& run = j["runs"][0];
  EXPECT_EQ(run["configuration"], "LRA Table 1 configuration 1.2 (entry sinkhorn/listops)") << j.dump();
  EXPECT_TRUE(has(read_text(out / "bench.md"), "sinkhorn (LRA Table 1 configuration 1.2 (entry sinkhorn/listops))"));
  auto bad = lrahost("bench --task listops --preset smoke --plugins s4d --reference table1 --out " +
                     path("bench-bad").string());
  EXPECT_EQ(bad.code, 2) << bad.output;
}

// Two seeds and the leaderboard: one open entry labelled with the
// configuration, not one per task's settings.
TEST_F(ReferenceConfigurationCli, TheLeaderboardLabelsTheEntry) {
  ASSERT_EQ(table1_run("linformer", "s0").code, 0);
  ASSERT_EQ(table1_run("linformer", "s1", " --seed 1").code, 0);
  const fs::path site = path("site");
  auto b = lrahost("leaderboard " + path("s0").string() + " " + path("s1").string() + " --out " + site.string());
  ASSERT_EQ(b.code, 0) << b.output;
  const json j = json::parse(read_text(site / "leaderboard.json"));
  ASSERT_EQ(j["open"].size(), 1u) << j.dump();
  const std::string made_with = j["open"][0]["made_with"].get<std::string>();
  EXPECT_TRUE(has(made_with, "LRA Table 1 configuration 1.2; preset smoke")) << made_with;
  EXPECT_FALSE(has(made_with, "mask_keys")) << made_with;
  EXPECT_FALSE(has(made_with, "rules.param_budget_ratio")) << "the configuration's own settings are its label";
  EXPECT_TRUE(has(read_text(site / "leaderboard.md"), "LRA Table 1 configuration"));
}

// suite passes --reference to every run, and refuses before the first run a
// plugin the configuration does not cover.
TEST_F(ReferenceConfigurationCli, SuitePassesItToEveryRun) {
  const fs::path out = path("suite");
  auto s = lrahost("suite --plugin sinkhorn --reference table1 --tasks listops --seeds 0 --preset smoke --threads 1 "
                   "--data-dir " + data() + " --out " + out.string() + tiny_sets());
  ASSERT_EQ(s.code, 0) << s.output;
  const json summary = json::parse(read_text(out / "suite.json"));
  EXPECT_EQ(summary["reference"], "table1");
  const json r = result_of(out / summary["runs"][0]["run_dir"].get<std::string>());
  EXPECT_EQ(r["reference_configuration"]["entry"], "sinkhorn/listops");
  EXPECT_TRUE(has(read_text(out / "suite.md"), "LRA Table 1 configuration")) << read_text(out / "suite.md");
  auto refused = lrahost("suite --plugin s4d --reference table1 --tasks listops --seeds 0 --preset smoke --out " +
                         path("suite-s4d").string());
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_FALSE(fs::exists(path("suite-s4d") / "runs")) << "refused before the first run";
}

}  // namespace
}  // namespace lra::test
