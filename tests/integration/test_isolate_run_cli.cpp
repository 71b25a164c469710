// Issue 43: `lrahost run --isolate` — training with the mixer plugin in a
// confined process of its own (isolation/isolated_plugin.h). The host holds
// and trains the mixer's tensors; the process computes forward and backward
// calls and sees nothing of the run. Checked: every built-in mixer and a
// Python mixer train bit-identically to the same run in process (dropout
// masks, random features redrawn in forward and the run's random stream
// included), an isolated run resumes to the uninterrupted one, a plugin that
// looks for the run's files finds them in process and none isolated, and
// misuse is refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool sandbox_works() { return std::system("bwrap --ro-bind / / --unshare-all true >/dev/null 2>&1") == 0; }

const char* kFewSteps = " --set train.steps=4 --set train.eval_every=4 --set train.warmup=2 --set train.steps_per_cycle=4"
                        " --set data.test_size=100 --set data.val_size=50";

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class IsolateRunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
  }
  Outcome run(const std::string& plugin, const fs::path& out, const std::string& extra = "", const std::string& env = "") {
    return lrahost("run --plugin " + plugin + " --task listops --preset smoke --threads 2 --seed 0 --data-dir " +
                       (d_.path() / "data").string() + " --out " + out.string() + kFewSteps + " " + extra,
                   env);
  }
  static json result(const fs::path& out) { return json::parse(read_text(out / "result.json")); }
  TempDir d_;
};

// The boundary changes nothing a run computes: model.pt (its SHA-256), the
// learning curve and the scores are those of the same run in process, for
// every built-in mixer (smoke settings: dropout on) and a Python mixer.
TEST_F(IsolateRunCli, EveryBuiltInMixerAndAPythonMixerTrainIsolatedExactlyAsInProcess) {
  const auto plugins = every_mixer_plugin();
  ASSERT_GE(plugins.size(), 12u);
  for (const auto& [p, spec] : plugins) {
    SCOPED_TRACE(p);
    const fs::path plain = d_.path() / ("plain-" + p), isolated = d_.path() / ("isolated-" + p);
    const auto a = run(spec, plain);
    ASSERT_EQ(a.code, 0) << a.output;
    const auto b = run(spec, isolated, "--isolate");
    ASSERT_EQ(b.code, 0) << b.output;
    const json ra = result(plain), rb = result(isolated);
    EXPECT_EQ(ra["model"]["sha256"], rb["model"]["sha256"]);
    EXPECT_EQ(ra["history"], rb["history"]);
    EXPECT_EQ(ra["metrics"]["test_accuracy"], rb["metrics"]["test_accuracy"]);
    EXPECT_EQ(ra["plugin"]["sha256"], rb["plugin"]["sha256"]);
    EXPECT_EQ(ra["plugin"]["file"], rb["plugin"]["file"]);
    EXPECT_EQ(ra["plugin"]["options"], rb["plugin"]["options"]);
    EXPECT_TRUE(has(read_text(isolated / "run.log"), "mixer process: ")) << read_text(isolated / "run.log");
    EXPECT_TRUE(fs::exists(isolated / "mixer-process.log"));
    // The isolated result verifies like any other.
    const auto v = lrahost("verify " + isolated.string());
    EXPECT_EQ(v.code, 0) << v.output;
  }
}

// Checkpoints hold the mixer's tensors (the host's) and the run's one random
// stream: an isolated run resumed from its middle ends where it would have
// (the transformer: attention dropout drawn in the process).
TEST_F(IsolateRunCli, AnIsolatedRunResumesToTheUninterruptedOne) {
  const std::string steps = "--isolate --set train.steps=6 --set train.eval_every=3 --set train.checkpoint_every=3";
  const fs::path whole = d_.path() / "whole", cut = d_.path() / "cut";
  ASSERT_EQ(run("transformer", whole, steps).code, 0);
  ASSERT_EQ(run("transformer", cut, steps).code, 0);
  for (const char* f : {"result.json", "model.pt", "history.csv", "curves.svg"}) fs::remove(cut / f);
  fs::remove_all(cut / "checkpoints" / "step-6");
  const auto resumed = run("transformer", cut, steps + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_TRUE(has(resumed.output, "resumed from")) << resumed.output;
  EXPECT_EQ(result(whole)["model"]["sha256"], result(cut)["model"]["sha256"]);
  EXPECT_EQ(result(whole)["metrics"]["test_accuracy"], result(cut)["metrics"]["test_accuracy"]);
}

// A plugin that, once trained, looks for the run's files (model.pt,
// result.json, inputs) where it runs: in process it finds the ones in its
// working folder; isolated it finds none, and what it printed is in the run's
// mixer-process.log, not the host's output.
TEST_F(IsolateRunCli, AdversarialAPluginLookingForTheRunsFilesFindsNoneIsolated) {
  const fs::path here = d_.path() / "here";
  fs::create_directories(here);
  write_text(here / "model.pt", "weights");
  write_text(here / "result.json", "{}");
  const std::string cheat = fixture_plugin("fixture_gated_cheat");
  const auto in_process = run(cheat, d_.path() / "plain", "", "cd " + here.string() + " &&");
  ASSERT_EQ(in_process.code, 0) << in_process.output;
  EXPECT_TRUE(has(in_process.output, "gated cheat: found ./model.pt")) << in_process.output;

  const auto isolated = run(cheat, d_.path() / "isolated", "--isolate", "cd " + here.string() + " &&");
  ASSERT_EQ(isolated.code, 0) << isolated.output;
  EXPECT_FALSE(has(isolated.output, "gated cheat")) << isolated.output;
  const std::string log = read_text(d_.path() / "isolated" / "mixer-process.log");
  EXPECT_TRUE(has(log, "gated cheat: the gate is open")) << log;
  EXPECT_TRUE(has(log, "gated cheat: no file of the run in view")) << log;
  // Its gate is a buffer it sets in forward: the host keeps it, so model.pt carries it.
  EXPECT_EQ(result(d_.path() / "plain")["model"]["sha256"], result(d_.path() / "isolated")["model"]["sha256"]);
}

TEST_F(IsolateRunCli, MisuseIsRefusedBeforeAnyWork) {
  const auto unknown = run("no_such_mixer", d_.path() / "a", "--isolate");
  EXPECT_EQ(unknown.code, 3) << unknown.output;
  EXPECT_TRUE(has(unknown.output, "no_such_mixer")) << unknown.output;
  const auto ranks = run("transformer", d_.path() / "b", "--isolate", "WORLD_SIZE=2 RANK=0 LOCAL_RANK=0");
  EXPECT_EQ(ranks.code, 2) << ranks.output;
  EXPECT_TRUE(has(ranks.output, "--isolate trains in one process")) << ranks.output;
  EXPECT_FALSE(fs::exists(d_.path() / "a"));
  EXPECT_FALSE(fs::exists(d_.path() / "b"));
}

}  // namespace
}  // namespace lra::test
