// `lrahost run` end to end: results, determinism, verification, and the
// rules/usage errors (exit 2 and 4) with no partial output.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_run.h"

using lra::test::fixture_plugin;
using lra::test::lrahost;
using lra::test::read_text;
using lra::test::TempDir;
using lra::test::tiny_run_args;
using lra::test::write_text;
using nlohmann::json;

namespace {

json load_json(const std::filesystem::path& p) { return json::parse(read_text(p)); }

std::string smoke_manifest_text() { return read_text(std::string(LRA_SOURCE_DIR) + "/manifests/smoke/listops.toml"); }

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << "fixture text lacks: " << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

TEST(RunCli, TinyRunWritesAVerifiableOpenResult) {
  TempDir dir;
  const auto out = dir.path() / "run";
  auto o = lrahost(tiny_run_args(dir.str() + "/data", out.string()));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("test accuracy"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("majority-class rate"), std::string::npos) << o.output;
  // A smoke run with overrides is set beside nothing (issue 48): not the paper's
  // Table 1 (official manifests only), not the committed smoke baseline (another command).
  EXPECT_EQ(o.output.find("36.37"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("smoke baseline"), std::string::npos) << o.output;
  for (const char* f : {"result.json", "model.pt", "run.log"}) EXPECT_TRUE(std::filesystem::exists(out / f)) << f;

  json r = load_json(out / "result.json");
  EXPECT_EQ(r["schema"], "lrahost.result/v1");
  EXPECT_EQ(r["division"], "open");
  EXPECT_TRUE(r["valid"].get<bool>());
  EXPECT_EQ(r["plugin"]["name"], "transformer");
  EXPECT_EQ(r["task"]["name"], "listops");
  EXPECT_EQ(r["config"]["train"]["steps"], 12);
  EXPECT_EQ(r["task"]["examples"]["test"], 40);
  const double acc = r["metrics"]["test_accuracy"];
  EXPECT_GE(acc, 0.0);
  EXPECT_LE(acc, 1.0);
  EXPECT_FALSE(r["overrides"].empty());
  EXPECT_EQ(r["digest"].get<std::string>().rfind("sha256:", 0), 0u);

  auto v = lrahost("verify " + (out / "result.json").string());
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("open, valid"), std::string::npos) << v.output;

  // Any edit is detected.
  r["metrics"]["test_accuracy"] = 0.99;
  write_text(dir.path() / "edited" / "result.json", r.dump(2));
  auto e = lrahost("verify " + (dir.path() / "edited").string());
  EXPECT_EQ(e.code, 4) << e.output;
  EXPECT_NE(e.output.find("INVALID"), std::string::npos) << e.output;
  EXPECT_NE(e.output.find("digest"), std::string::npos) << e.output;

  // Refuses to overwrite a finished run.
  auto again = lrahost(tiny_run_args(dir.str() + "/data", out.string()));
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("already holds a result.json"), std::string::npos) << again.output;
}

// model.positions = "rotary": positions only through the mixers. A mixer that
// rotates trains and is recorded so; one that does not would see no
// positions at all and is refused before anything is written.
TEST(RunCli, RotaryPositionsNeedAMixerThatRotates) {
  TempDir dir;
  const auto out = dir.path() / "rotary";
  auto o = lrahost(tiny_run_args(dir.str() + "/data", out.string()) + " --set model.positions=rotary");
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = load_json(out / "result.json");
  EXPECT_EQ(r["config"]["model"]["positions"], "rotary");
  EXPECT_EQ(r["division"], "open");
  const auto refused = dir.path() / "refused";
  o = lrahost("run --plugin s4d --task listops --preset smoke --set model.positions=rotary --out " + refused.string());
  EXPECT_EQ(o.code, 4) << o.output;
  EXPECT_NE(o.output.find("LRA_CAP_ROTARY"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(refused / "result.json"));
}

TEST(RunCli, SameSeedGivesIdenticalMetrics) {
  TempDir dir;
  const std::string data = dir.str() + "/data";
  ASSERT_EQ(lrahost(tiny_run_args(data, dir.str() + "/a") + " --seed 3").code, 0);
  ASSERT_EQ(lrahost(tiny_run_args(data, dir.str() + "/b") + " --seed 3").code, 0);
  ASSERT_EQ(lrahost(tiny_run_args(data, dir.str() + "/c") + " --seed 4").code, 0);
  json a = load_json(dir.path() / "a" / "result.json"), b = load_json(dir.path() / "b" / "result.json"),
       c = load_json(dir.path() / "c" / "result.json");
  EXPECT_EQ(a["metrics"], b["metrics"]);
  EXPECT_EQ(a["history"], b["history"]);
  EXPECT_EQ(a["task"]["data_fingerprint"], b["task"]["data_fingerprint"]);
  EXPECT_EQ(a["seed"], 3);
  EXPECT_NE(a["metrics"]["final_train_loss"], c["metrics"]["final_train_loss"]);
}

TEST(RunCli, OverBudgetPluginExits4BeforeTraining) {
  TempDir dir;
  const auto out = dir.path() / "run";
  auto o = lrahost(replace_once(tiny_run_args(dir.str() + "/data", out.string()), "--plugin transformer",
                                "--plugin " + fixture_plugin("fixture_ballast")));
  EXPECT_EQ(o.code, 4) << o.output;
  EXPECT_NE(o.output.find("plugin 'fixture_ballast' gives the model"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("allows at most"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(RunCli, MixerOptionsAreBoundedAndRecorded) {
  TempDir dir;
  const auto out = dir.path() / "run";
  auto o = lrahost(replace_once(tiny_run_args(dir.str() + "/data", out.string()), "--plugin transformer",
                                "--plugin " + fixture_plugin("fixture_ballast")) +
                   " --set mixer.ballast=0 --set mixer.note=hello");
  ASSERT_EQ(o.code, 0) << o.output;
  json r = load_json(out / "result.json");
  EXPECT_EQ(r["plugin"]["options"]["ballast"], 0);
  EXPECT_EQ(r["plugin"]["options"]["note"], "hello");
  for (const auto& reason : r["division_reasons"])
    EXPECT_EQ(reason.get<std::string>().find("mixer."), std::string::npos) << "mixer options must not open a run";

  auto bad = lrahost(tiny_run_args(dir.str() + "/data", (dir.path() / "x").string()) + " --set mixer.window=3");
  EXPECT_EQ(bad.code, 4) << bad.output;
  EXPECT_NE(bad.output.find("has no option 'window'"), std::string::npos) << bad.output;
  auto typed = lrahost(replace_once(tiny_run_args(dir.str() + "/data", (dir.path() / "y").string()),
                                    "--plugin transformer", "--plugin " + fixture_plugin("fixture_ballast")) +
                       " --set mixer.ballast=many");
  EXPECT_EQ(typed.code, 4) << typed.output;
  EXPECT_NE(typed.output.find("'mixer.ballast' must be int"), std::string::npos) << typed.output;
}

TEST(RunCli, PluginErrorsBecomeHostErrors) {
  TempDir dir;
  auto o = lrahost(replace_once(tiny_run_args(dir.str() + "/data", dir.str() + "/run"), "--plugin transformer",
                                "--plugin " + fixture_plugin("fixture_throw")));
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("deliberate failure in create()"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "run"));
}

TEST(RunCli, ManifestErrorsExit4NamingFileAndKey) {
  TempDir dir;
  struct Case { std::string name, text, expect; };
  const std::vector<Case> cases = {
      {"malformed.toml", "[model\nlayers = 2\n", "malformed.toml"},
      {"unknown_key.toml", replace_once(smoke_manifest_text(), "[train]", "[train]\nwarmpu = 3"), "train.warmpu"},
      {"wrong_type.toml", replace_once(smoke_manifest_text(), "layers = 2", "layers = \"two\""), "model.layers"},
      {"fractional.toml", replace_once(smoke_manifest_text(), "layers = 2", "layers = 2.5"), "model.layers"},
  };
  for (const auto& c : cases) {
    const auto file = dir.path() / c.name;
    write_text(file, c.text);
    auto o = lrahost("run --plugin transformer --task listops --manifest " + file.string() + " --out " + dir.str() +
                     "/run");
    EXPECT_EQ(o.code, 4) << c.name << "\n" << o.output;
    EXPECT_NE(o.output.find(c.name), std::string::npos) << c.name << "\n" << o.output;
    EXPECT_NE(o.output.find(c.expect), std::string::npos) << c.name << "\n" << o.output;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "run")) << c.name;
  }
}

TEST(RunCli, UnknownOverrideKeyExits4) {
  auto o = lrahost("run --plugin transformer --task listops --preset smoke --set train.stepz=3");
  EXPECT_EQ(o.code, 4) << o.output;
  EXPECT_NE(o.output.find("train.stepz"), std::string::npos) << o.output;
  auto d = lrahost("run --plugin transformer --task listops --preset smoke --set data.colour=3");
  EXPECT_EQ(d.code, 4) << d.output;
  EXPECT_NE(d.output.find("data.colour"), std::string::npos) << d.output;
}

TEST(RunCli, UsageErrorsExit2WithChoices) {
  auto task = lrahost("run --plugin transformer --task sudoku");
  EXPECT_EQ(task.code, 2) << task.output;
  EXPECT_NE(task.output.find("listops"), std::string::npos) << task.output;
  auto preset = lrahost("run --plugin transformer --task listops --preset fast");
  EXPECT_EQ(preset.code, 2) << preset.output;
  EXPECT_NE(preset.output.find("official"), std::string::npos) << preset.output;
  EXPECT_NE(preset.output.find("smoke"), std::string::npos) << preset.output;
  auto set = lrahost("run --plugin transformer --task listops --preset smoke --set train.steps");
  EXPECT_EQ(set.code, 2) << set.output;
  EXPECT_EQ(lrahost("frobnicate").code, 2);
  EXPECT_EQ(lrahost("run --task listops").code, 2);
}

TEST(RunCli, MicroBatchingGivesTheSameUpdates) {
  TempDir dir;
  const std::string no_dropout = " --set model.dropout=0.0 --set model.attention_dropout=0.0";
  ASSERT_EQ(lrahost(tiny_run_args(dir.str() + "/data", dir.str() + "/whole") + no_dropout).code, 0);
  auto o = lrahost(tiny_run_args(dir.str() + "/data", dir.str() + "/micro") + no_dropout + " --micro-batch 8");
  ASSERT_EQ(o.code, 0) << o.output;
  json a = load_json(dir.path() / "whole" / "result.json"), b = load_json(dir.path() / "micro" / "result.json");
  EXPECT_EQ(b["timing"]["micro_batch"], 8);
  EXPECT_NEAR(a["metrics"]["final_train_loss"].get<double>(), b["metrics"]["final_train_loss"].get<double>(), 1e-4);
  EXPECT_NEAR(a["metrics"]["test_loss"].get<double>(), b["metrics"]["test_loss"].get<double>(), 1e-4);
}


// OpenBLAS falls back to Prescott's kernels on a CPU newer than itself; a run
// starts itself again on the kernels the CPU has (device/blas_kernels.h) and
// says which in run.log. A user's OPENBLAS_CORETYPE is theirs.
TEST(RunCli, TrainsOnTheBestOpenBlasKernelsTheCpuHas) {
  TempDir dir;
  const auto out = dir.path() / "run";
  auto o = lrahost(tiny_run_args(dir.str() + "/data", out.string()), "env -u OPENBLAS_CORETYPE");
  ASSERT_EQ(o.code, 0) << o.output;
  const std::string log = read_text(out / "run.log");
  const auto at = log.find("cpu: 1 thread, OpenBLAS ");
  ASSERT_NE(at, std::string::npos) << "Debian's LibTorch runs on OpenBLAS; run.log says which kernels:\n" << log;
  const std::string line = log.substr(at, log.find('\n', at) - at);
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    EXPECT_EQ(line.find("Prescott"), std::string::npos) << "SSE3 kernels on a CPU with AVX2: " << line;

  const auto mine = dir.path() / "mine";
  o = lrahost(tiny_run_args(dir.str() + "/data", mine.string()), "OPENBLAS_CORETYPE=Prescott");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(read_text(mine / "run.log").find("OpenBLAS Prescott kernels (OPENBLAS_CORETYPE=Prescott)"),
            std::string::npos)
      << read_text(mine / "run.log");
}

// --cuda-graphs (train/step_graph.h): asking for a capture where none can be
// made is exit 2 before anything is written; a CPU result records nothing
// about graphs (it has none); an unknown value names the choices.
TEST(RunCli, CudaGraphsAskedForOnTheCpuAreRefusedBeforeAnyOutput) {
  TempDir dir;
  const auto out = dir.path() / "run";
  auto o = lrahost(tiny_run_args(dir.str() + "/data", out.string()) + " --device cpu --cuda-graphs on");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("--cuda-graphs on: CUDA graphs need a CUDA device"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(out)) << "a refused run leaves nothing behind";

  auto bad = lrahost(tiny_run_args(dir.str() + "/data", out.string()) + " --cuda-graphs yes");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--cuda-graphs"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("auto"), std::string::npos) << bad.output;

  // auto (the default) and off train on the CPU as ever; only CUDA results say how their updates ran.
  ASSERT_EQ(lrahost(tiny_run_args(dir.str() + "/data", out.string()) + " --cuda-graphs off").code, 0);
  const json r = load_json(out / "result.json");
  EXPECT_FALSE(r["timing"].contains("cuda_graphs")) << r["timing"].dump();
  EXPECT_EQ(read_text(out / "run.log").find("cuda graphs"), std::string::npos);
}
