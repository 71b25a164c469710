// Issue 31, point 7, through the binary: hostile values in files, options
// and the environment each end with the documented exit code and a message
// naming the value, and the honest case beside each still works. (Unit side:
// tests/unit/test_hostile_inputs.cpp.)
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "results/result.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// The tiny ListOps data and one finished run on it, made once for the whole program.
const TempDir& shared() {
  static TempDir* dir = new TempDir();  // kept for the program's life
  static bool made = false;
  if (!made) {
    auto o = lrahost(tiny_run_args(dir->str(), (dir->path() / "honest").string()));
    EXPECT_EQ(o.code, 0) << o.output;
    made = true;
  }
  return *dir;
}
std::string data_dir() { return shared().str(); }
fs::path honest_run() { return shared().path() / "honest"; }
std::string tiny(const fs::path& out) { return tiny_run_args(data_dir(), out.string()); }

// --- duplicate keys ----------------------------------------------------------------

TEST(HostileJson, AResultWithAKeyTwiceIsMalformedExit5AndTheHonestOneVerifies) {
  TempDir d;
  const std::string text = read_text(honest_run() / "result.json");
  auto honest = lrahost("verify " + (honest_run() / "result.json").string());
  EXPECT_EQ(honest.code, 0) << honest.output;

  // {"division":"open","division":"closed"}: nlohmann keeps the last, another reader the first.
  const std::string first_key = json::parse(text).begin().key();
  std::string twice = text;
  twice.insert(twice.find('{') + 1, "\"" + first_key + "\":\"forged\",");
  write_text(d.path() / "twice" / "result.json", twice);
  auto o = lrahost("verify " + (d.path() / "twice" / "result.json").string());
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_TRUE(contains(o.output, "duplicate key \"" + first_key + "\"")) << o.output;
}

// --- state.json progress ---------------------------------------------------------------

fs::path interrupted_run(const TempDir& d, const std::string& name) {
  const fs::path out = d.path() / name;
  auto o = lrahost(tiny(out) + " --set train.checkpoint_every=4");
  EXPECT_EQ(o.code, 0) << o.output;
  fs::remove(out / "result.json");
  return out;
}
std::string resume(const fs::path& out) { return tiny(out) + " --set train.checkpoint_every=4 --resume"; }

void set_progress(const fs::path& out, const char* step, const std::string& key, const json& value) {
  const fs::path state = out / "checkpoints" / step / "state.json";
  auto j = json::parse(read_text(state));
  j["progress"][key] = value;
  write_text(state, j.dump());
}

TEST(HostileCheckpoint, BestValidationOf700PercentInStateJsonIsRefusedNotResumed) {
  TempDir d;
  const fs::path out = interrupted_run(d, "run");
  for (const char* step : {"step-4", "step-8"}) set_progress(out, step, "best_val_accuracy", 7.0);
  auto o = lrahost(resume(out));
  EXPECT_EQ(o.code, 5) << o.output;  // today: "best validation 700.00%", exit 0
  EXPECT_FALSE(contains(o.output, "700.00%")) << o.output;
  EXPECT_TRUE(contains(o.output, (out / "checkpoints" / "step-8" / "state.json").string())) << o.output;
  EXPECT_TRUE(contains(o.output, "progress.best_val_accuracy")) << o.output;
  EXPECT_FALSE(fs::exists(out / "result.json"));

  // Only the newest forged: the older, honest checkpoint is used and the skip says why.
  const fs::path out2 = interrupted_run(d, "run2");
  set_progress(out2, "step-8", "final_train_accuracy", -1.0);
  auto o2 = lrahost(resume(out2));
  ASSERT_EQ(o2.code, 0) << o2.output;
  EXPECT_TRUE(contains(o2.output, "progress.final_train_accuracy")) << o2.output;
  const auto r = json::parse(read_text(out2 / "result.json"));
  EXPECT_EQ(r["timing"]["resumed_from"], "step-4");
  EXPECT_LE(r["metrics"]["best_val_accuracy"].get<double>(), 1.0);
}

// --- --seeds ------------------------------------------------------------------------------

TEST(HostileOptions, SeedsWithAnEmptyElementAreAUsageErrorNamingThePosition) {
  TempDir d;
  for (const std::string& args :
       {"suite --plugin transformer --tasks listops --preset smoke --out " + d.str() + "/s --seeds 0,,1",
        "sweep --plugins transformer --tasks listops --slurm --out " + d.str() + "/w --seeds 0,,1"}) {
    auto o = lrahost(args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.output;  // today: accepted as 0,1
    EXPECT_TRUE(contains(o.output, "--seeds '0,,1': element 2 is empty")) << o.output;
  }
  EXPECT_FALSE(fs::exists(d.path() / "s"));
  EXPECT_FALSE(fs::exists(d.path() / "w"));
}

// --- absurd numbers in --set -----------------------------------------------------------------

TEST(HostileOptions, AFiniteButAbsurdLearningRateIsARulesErrorWithTheRange) {
  TempDir d;
  auto o = lrahost(tiny(d.path() / "r") + " --set train.lr=1e308");
  EXPECT_EQ(o.code, 4) << o.output;  // today: "internal error" (exit 1) once the parameters overflow
  EXPECT_TRUE(contains(o.output, "train.lr")) << o.output;
  EXPECT_TRUE(contains(o.output, "(0, 10]")) << o.output;
  EXPECT_FALSE(fs::exists(d.path() / "r"));
}

// --- out of memory inside plugin code ------------------------------------------------------------

TEST(HostileMemory, AnAllocationThatFailsInAPluginIsExit7NotAPluginFault) {
  TempDir d;
  // forward asks for a petabyte: the conformance check's first forward fails.
  auto fwd = lrahost("inspect --check " + fixture_plugin("fixture_oom_forward"));
  EXPECT_EQ(fwd.code, 7) << fwd.output;  // today: 3, "plugin failed in forward"
  EXPECT_TRUE(contains(fwd.output, "out of memory in plugin 'fixture_oom_forward'")) << fwd.output;
  // create() registers a 1.2 PB parameter.
  const std::string huge = " --set mixer.ballast=300000000000000";
  auto create = lrahost("inspect --check " + fixture_plugin("fixture_ballast") + huge);
  EXPECT_EQ(create.code, 7) << create.output;
  EXPECT_TRUE(contains(create.output, "create")) << create.output;
  auto run = lrahost("run --plugin " + fixture_plugin("fixture_ballast") + " --task listops --preset smoke --threads 1"
                     " --data-dir " + data_dir() + " --out " + (d.path() / "r").string() + tiny_sets() + huge);
  EXPECT_EQ(run.code, 7) << run.output;
  // A plugin's own exception stays its fault.
  auto own = lrahost("inspect --check " + fixture_plugin("fixture_throw"));
  EXPECT_EQ(own.code, 3) << own.output;
}

// --- plugin names -------------------------------------------------------------------------------------

TEST(HostilePluginName, ADescriptorNameOutsideTheAlphabetIsRejectedBeforeLoading) {
  auto o = lrahost("inspect " + fixture_plugin("fixture_hostile_name"));
  EXPECT_EQ(o.code, 3) << o.output;  // its constructor aborts: loading it would be a crash, not 3
  EXPECT_TRUE(contains(o.output, "plugin name")) << o.output;
  EXPECT_TRUE(contains(o.output, "A-Z a-z 0-9 . _ -")) << o.output;
  auto listed = lrahost("plugins");
  EXPECT_EQ(listed.code, 0) << listed.output;
  EXPECT_FALSE(contains(listed.output, "plugin name")) << listed.output;  // no built-in plugin breaks the rule
  EXPECT_EQ(lrahost("inspect transformer").code, 0);
}

TEST(HostilePluginName, AResealedResultWithATenMegabyteNameIsInvalidAndTheMessageStaysShort) {
  TempDir d;
  json r = json::parse(read_text(honest_run() / "result.json"));
  r["plugin"]["name"] = std::string(10 << 20, 'n');
  lra::host::write_result(d.path() / "big", lra::host::seal(r));
  auto o = lrahost("verify " + (d.path() / "big" / "result.json").string());
  EXPECT_EQ(o.code, 4) << o.output.substr(0, 2000);
  EXPECT_TRUE(contains(o.output, "plugin.name")) << o.output.substr(0, 2000);
  EXPECT_LT(o.output.size(), 100000u);
}

// --- integer environment variables -------------------------------------------------------------------

TEST(HostileEnvironment, ATimeoutBeyondTheRangeIsCalledTooLarge) {
  TempDir d;
  auto o = lrahost(tiny(d.path() / "r"), "WORLD_SIZE=2 RANK=0 LRA_DIST_TIMEOUT=2147483648");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(contains(o.output, "LRA_DIST_TIMEOUT=2147483648 is too large: expected an integer in 1..604800"))
      << o.output;  // today: "expected an integer >= 1"
}

// --- output paths ------------------------------------------------------------------------------------------

TEST(HostileOutputPath, ABlankOrBlankEdgedOutIsExit2AndCreatesNothing) {
  TempDir d;
  const std::string here = "cd " + d.str() + " &&";
  for (const std::string& out : {"' '", "'runs/x '", "' runs'"}) {
    for (const std::string& args : {"run --plugin transformer --task listops --preset smoke --out " + out,
                                    "data generate listops --n 10 --out " + out, "keygen --out " + out,
                                    "suite --plugin transformer --tasks listops --out " + out,
                                    "bench --report x.json --out " + out}) {
      auto o = lrahost(args, here);
      EXPECT_EQ(o.code, 2) << args << "\n" << o.output;
      EXPECT_TRUE(contains(o.output, "--out '")) << args << "\n" << o.output;
    }
  }
  EXPECT_TRUE(fs::is_empty(d.path())) << "something was created";
  // A space inside a name is a name like any other.
  auto ok = lrahost("keygen --out 'my keys/k'", here);
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_TRUE(fs::exists(d.path() / "my keys" / "k" / "lrahost-key.pem"));
}

}  // namespace
}  // namespace lra::test
