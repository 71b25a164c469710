// Issue 17, "plugins cannot lie or crash silently", through the binary:
// module names that are Python keywords save, resume and load for `span`;
// conformance checks catch each lying fixture and pass the honest one; faults
// in plugin code are named (plugin, call, step) with documented exit codes.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;

std::string tiny_fixture_run(const std::string& fixture, const std::string& data, const fs::path& out) {
  std::string args = tiny_run_args(data, out.string());
  args.replace(args.find("--plugin transformer"), 20, "--plugin " + fixture_plugin(fixture));
  return args;
}

// The last non-empty line of a file.
std::string last_line(const fs::path& p) {
  std::string text = read_text(p);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

class PluginIssue17 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = new TempDir(); }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string data() { return (dir_->path() / "data").string(); }
  static TempDir* dir_;
};
TempDir* PluginIssue17::dir_ = nullptr;

// Modules named "in" and "class" and a parameter named "def": the run saves
// model.pt and checkpoints, resumes from a checkpoint and `span` loads model.pt.
TEST_F(PluginIssue17, ReservedWordModuleNamesSaveResumeAndLoad) {
  const auto run = dir_->path() / "reserved";
  const std::string args = tiny_fixture_run("fixture_honest", data(), run) + " --set train.checkpoint_every=5";
  auto first = lrahost(args);
  ASSERT_EQ(first.code, 0) << first.output;
  ASSERT_TRUE(fs::exists(run / "checkpoints" / "step-10")) << first.output;
  const auto whole = nlohmann::json::parse(read_text(run / "result.json"));

  // As if killed after its last checkpoint: resume continues from step 10 and ends where the whole run did.
  fs::remove(run / "result.json");
  fs::remove(run / "model.pt");
  auto resumed = lrahost(args + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
  const auto again = nlohmann::json::parse(read_text(run / "result.json"));
  EXPECT_EQ(whole["metrics"], again["metrics"]);

  // span loads no plugin file a result names: a fixture is not installed, so it is passed by path.
  auto span = lrahost("span --run " + run.string() + " --plugin " + fixture_plugin("fixture_honest") +
                      " --samples 8 --data-dir " + data());
  ASSERT_EQ(span.code, 0) << span.output;
  EXPECT_TRUE(fs::exists(run / "span.json"));
}

// --- conformance checks: each lying fixture is caught before training, by name ---

struct Lie {
  const char* fixture;
  const char* check;  // the check named in the error
  const char* hint;   // part of the measured detail
};

class Conformance : public PluginIssue17, public ::testing::WithParamInterface<Lie> {};

TEST_P(Conformance, RunRefusesTheLyingFixtureBeforeTraining) {
  const Lie lie = GetParam();
  const auto out = dir_->path() / (std::string("lie-") + lie.fixture);
  auto o = lrahost(tiny_fixture_run(lie.fixture, data(), out));
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find(std::string("plugin '") + lie.fixture + "' failed the conformance check '" + lie.check + "'"),
            std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find(lie.hint), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(out)) << "a refused plugin must leave no run directory";
  // The same lie through `inspect --check`.
  auto i = lrahost("inspect --check " + fixture_plugin(lie.fixture));
  EXPECT_EQ(i.code, 3) << i.output;
  EXPECT_NE(i.output.find(std::string("conformance check '") + lie.check + "'"), std::string::npos) << i.output;
}

INSTANTIATE_TEST_SUITE_P(
    Lies, Conformance,
    ::testing::Values(Lie{"fixture_wrong_shape", "shape", "returned [2, 48, 32] for input [2, 49, 32]"},
                      Lie{"fixture_non_finite", "finite", "outputs are NaN or infinite"},
                      Lie{"fixture_nondeterministic", "deterministic", "differ by up to"},
                      Lie{"fixture_read_padding", "padding_mask", "changed by up to"},
                      Lie{"fixture_peek_future", "causal", "changed by up to"},
                      Lie{"fixture_no_probs", "attention_probs", "last_attention() is an undefined tensor"},
                      Lie{"fixture_bad_probs", "attention_probs", "expected [B, heads, L, L]"}),
    [](const ::testing::TestParamInfo<Lie>& p) { return std::string(p.param.check) + "_" + std::to_string(p.index); });

TEST_F(PluginIssue17, HonestFixtureAndBuiltInsPassEveryCheck) {
  for (const std::string& plugin : {fixture_plugin("fixture_honest"), std::string("transformer")}) {
    auto i = lrahost("inspect --check " + plugin);
    ASSERT_EQ(i.code, 0) << i.output;
    for (const char* check : {"shape", "finite", "deterministic", "padding_mask", "causal", "attention_probs"})
      EXPECT_NE(i.output.find(std::string(check) + " "), std::string::npos) << check << "\n" << i.output;
    EXPECT_EQ(i.output.find("failed"), std::string::npos) << i.output;
    EXPECT_NE(i.output.find("conformance checks passed: shape, finite, deterministic, padding_mask, causal, "
                            "attention_probs"),
              std::string::npos)
        << i.output;
  }
  auto run = lrahost(tiny_fixture_run("fixture_honest", data(), dir_->path() / "honest"));
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("conformance checks passed"), std::string::npos) << run.output;
}

// Issue 48: inspect --check says, before any run, on which official task the
// parameter budget would refuse the mixer with the options run gives it.
TEST_F(PluginIssue17, InspectCheckShowsTheOfficialBudgetsRunWouldEnforce) {
  auto heavy = lrahost("inspect --check " + fixture_plugin("fixture_ballast"));  // 2M extra parameters per layer
  ASSERT_EQ(heavy.code, 0) << heavy.output;
  EXPECT_NE(heavy.output.find("parameter budget listops 16,948,746 of 9,843,620 OVER"), std::string::npos) << heavy.output;
  EXPECT_NE(heavy.output.find("; image 2,248,458 of 273,303 OVER"), std::string::npos) << heavy.output;
  // The LRA suite's tasks in the paper's column order (manifest/suites.h).
  EXPECT_NE(heavy.output.find("run --preset official refuses it on listops, text, retrieval, image, pathfinder, pathx "
                              "(exit 4)"),
            std::string::npos)
      << heavy.output;
  auto light = lrahost("inspect --check " + fixture_plugin("fixture_ballast") + " --set mixer.ballast=0");
  ASSERT_EQ(light.code, 0) << light.output;
  EXPECT_EQ(light.output.find("OVER"), std::string::npos) << light.output;
  EXPECT_NE(light.output.find("listops 8,948,746 of 9,843,620 ok"), std::string::npos) << light.output;
  // A built-in gets its reference settings per task, as run gives them: linformer's learned projection on ListOps.
  auto linformer = lrahost("inspect --check linformer");
  ASSERT_EQ(linformer.code, 0) << linformer.output;
  EXPECT_NE(linformer.output.find("listops 9,076,810 of 9,843,620 ok"), std::string::npos) << linformer.output;
}

// Reformer's LRA reference settings attend across buckets, which its causal
// mode refuses: a bidirectional run is not refused for that; the causal check
// says it was not made, and why.
TEST_F(PluginIssue17, OptionsThatRuleOutCausalModeSkipTheCausalCheck) {
  std::string args = lra::test::tiny_run_args(data(), (dir_->path() / "reformer").string());
  args.replace(args.find("--plugin transformer"), 20, "--plugin reformer");
  auto run = lrahost(args);
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("the mixer refuses causal mode with this run's options"), std::string::npos) << run.output;
  // A causal promise it breaks in causal mode is still caught where it runs causally.
  args.append(" --set mixer.attend_across_buckets=false");
  args.replace(args.find("/reformer"), 9, "/reformer-2");
  EXPECT_EQ(lrahost(args).code, 0);
}

// --- descriptors the host cannot trust are refused before loading ---

TEST_F(PluginIssue17, UnknownCapabilityBitsAndOversizedDescriptorsAreRefused) {
  auto caps = lrahost("inspect " + fixture_plugin("fixture_unknown_caps"));
  EXPECT_EQ(caps.code, 3) << caps.output;
  EXPECT_NE(caps.output.find("capability bits 0x00100000"), std::string::npos) << caps.output;
  auto run = lrahost(tiny_fixture_run("fixture_unknown_caps", data(), dir_->path() / "caps"));
  EXPECT_EQ(run.code, 3) << run.output;
  EXPECT_NE(run.output.find("capability bits 0x00100000"), std::string::npos) << run.output;

  // Its static constructor aborts: exit 3 (not 134) proves it was never loaded.
  auto size = lrahost(tiny_fixture_run("fixture_oversized_descriptor", data(), dir_->path() / "size"));
  EXPECT_EQ(size.code, 3) << size.output;
  EXPECT_NE(size.output.find("section holds only"), std::string::npos) << size.output;
}

// --- faults in plugin code: named, with documented exit codes, last line of run.log ---

struct Fault {
  const char* fixture;
  int code;
  const char* message;  // after "plugin 'FIXTURE' "
};

class Faults : public PluginIssue17, public ::testing::WithParamInterface<Fault> {};

TEST_P(Faults, NamedWithPluginCallAndStep) {
  const Fault f = GetParam();
  const auto out = dir_->path() / (std::string("fault-") + f.fixture);
  auto o = lrahost(tiny_fixture_run(f.fixture, data(), out));
  EXPECT_EQ(o.code, f.code) << o.output;
  const std::string line = std::string("plugin '") + f.fixture + "' " + f.message;
  EXPECT_NE(o.output.find("lrahost: error: " + line), std::string::npos) << o.output;
  EXPECT_NE(last_line(out / "run.log").find(line), std::string::npos) << read_text(out / "run.log");
  EXPECT_FALSE(fs::exists(out / "result.json"));
}

INSTANTIATE_TEST_SUITE_P(
    PluginCode, Faults,
    ::testing::Values(
        Fault{"fixture_throw_forward", 3, "failed in forward at step 4 (training): deliberate failure in forward()"},
        Fault{"fixture_late_wrong_shape", 3, "failed in forward at step 4 (training): returned [32, 49, 16] for input"},
        Fault{"fixture_segv", 6, "crashed (SIGSEGV) in forward at step 4 (training)"},
        Fault{"fixture_abort", 6, "crashed (SIGABRT) in forward at step 4 (training)"},
        Fault{"fixture_fpe", 6, "crashed (SIGFPE) in forward at step 4 (training)"},
        Fault{"fixture_bus", 6, "crashed (SIGBUS) in forward at step 4 (training)"}),
    [](const ::testing::TestParamInfo<Fault>& p) { return std::string(p.param.fixture).substr(8); });

TEST_F(PluginIssue17, CreateFailureNamesThePlugin) {
  auto o = lrahost(tiny_fixture_run("fixture_throw", data(), dir_->path() / "create"));
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("plugin 'fixture_throw' could not build its mixer: deliberate failure in create()"),
            std::string::npos)
      << o.output;
}

TEST_F(PluginIssue17, SuiteRecordsTheCrash) {
  std::string args = tiny_fixture_run("fixture_segv", data(), (dir_->path() / "suite").string());
  args.replace(0, 3, "suite");
  args.replace(args.find("--task listops"), 14, "--tasks listops");
  auto o = lrahost(args);
  EXPECT_EQ(o.code, 6) << o.output;
  const auto suite = nlohmann::json::parse(read_text(dir_->path() / "suite" / "suite.json"));
  const std::string error = suite.dump();
  EXPECT_NE(error.find("plugin 'fixture_segv' crashed (SIGSEGV) in forward at step 4"), std::string::npos) << error;
}

TEST_F(PluginIssue17, SweepRecordsTheCrashLocallyAndWhenCollecting) {
  const auto dir = dir_->path() / "sweep";
  auto o = lrahost("sweep --plugins " + fixture_plugin("fixture_segv") + " --tasks listops --seeds 0 --preset smoke " +
                   "--data-dir " + data() + " --out " + dir.string() + tiny_sets());
  ASSERT_EQ(o.code, 6) << o.output;  // the sweep exits with its first failed run's code
  const std::string crash = "plugin 'fixture_segv' crashed (SIGSEGV) in forward at step 4";
  EXPECT_NE(o.output.find("FAILED (exit 6): " + crash), std::string::npos) << o.output;
  // --collect (as after a Slurm array) finds it as the last line of the run's run.log.
  auto c = lrahost("sweep --collect " + dir.string());
  ASSERT_EQ(c.code, 0) << c.output;
  const auto lb = nlohmann::json::parse(read_text(dir / "leaderboard.json"));
  ASSERT_EQ(lb["missing"].size(), 1u) << lb.dump(2);
  EXPECT_NE(lb["missing"][0]["reason"].get<std::string>().find(crash), std::string::npos) << lb.dump(2);
}

}  // namespace
}  // namespace lra::test
