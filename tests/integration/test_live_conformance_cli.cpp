// Issue 31, point 6: the conformance checks ran once, before training, so a
// mixer that turned dishonest later (after N calls, or only on the longer
// inputs of the measurement) passed them and then copied its "memory" from
// the future. `forget` now repeats the causal check on the live model at
// random training steps and measured batches (docs/forgetting.md#live-conformance-checks).
// Each attack must end with exit 3 naming the step or batch and leave no
// forgetting.json or model.pt; the same plugin with its switch beyond the run,
// and the built-in causal mixers, must pass with the checks on.
#include <filesystem>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kLateLeak = std::string(LRA_FIXTURE_PLUGIN_DIR) + "/fixture_late_leak.so";

// English-like text long enough for the smoke preset (it tests up to 256).
std::string fixture_text(size_t bytes) {
  const char* sentences[] = {"The jury said the election was conducted fairly. ",
                             "A small boat drifted slowly across the quiet harbor. ",
                             "Several committees reported their findings to the council. ",
                             "She opened the window and listened to the distant rain. ",
                             "Prices of wheat and corn rose sharply during the summer. "};
  std::string s;
  for (size_t i = 0; s.size() < bytes; ++i) s += sentences[(i * 7 + i / 5) % 5];
  return s;
}

class LiveConformance : public ::testing::Test {
 protected:
  void SetUp() override { write_text(dir_.path() / "corpus.txt", fixture_text(120000)); }
  Outcome forget(const std::string& plugin, const std::string& extra) {
    return lrahost("forget --plugin " + plugin + " --preset smoke --corpus " + (dir_.path() / "corpus.txt").string() +
                   " --out " + out().string() + " " + extra);
  }
  fs::path out() const { return dir_.path() / "run"; }
  // A shorter schedule for the tests that need the whole run (warmup + decay shortened first:
// overrides apply in order, and warmup + decay must fit in the steps).
std::string steps(int n) {
  return "--set train.warmup=" + std::to_string(n / 5) + " --set train.decay_steps=" + std::to_string(n / 5) +
         " --set train.steps=" + std::to_string(n) + " ";
}

// What a refused run leaves: run.log (ending with the reason), no result, no weights.
  void expect_nothing_kept(const Outcome& o) {
    EXPECT_FALSE(fs::exists(out() / "forgetting.json")) << o.output;
    EXPECT_FALSE(fs::exists(out() / "forgetting.svg"));
    EXPECT_FALSE(fs::exists(out() / "model.pt"));
    EXPECT_NE(read_text(out() / "run.log").find("failed the conformance check 'causal'"), std::string::npos);
  }
  TempDir dir_;
};

// The issue's mixer: honest for 50 calls (the checks before training pass),
// then leaking the next token. Leaking from about step 20 of 300, with a
// check on each step at probability 1/16, it escapes with probability < 1e-7.
TEST_F(LiveConformance, MixerLeakingTheNextTokenAfter50CallsIsCaughtDuringTrainingWithTheStep) {
  const Outcome o = forget(kLateLeak, "");
  ASSERT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("conformance checks passed"), std::string::npos) << "the check before training must pass";
  EXPECT_TRUE(std::regex_search(o.output, std::regex("plugin 'fixture_late_leak' failed the conformance check 'causal' "
                                                     "during training at step [0-9]+: the model's outputs at position "
                                                     "[0-9]+ of example [0-9]+ changed by [0-9.e+-]+ \\(tolerance")))
      << o.output;
  expect_nothing_kept(o);
}

// Honest on every input as long as training (length 128), leaking only on
// the measurement's longer samples: training never sees it, the measured
// batches do (32 lengths, ~24 of them long enough, half the batches checked).
TEST_F(LiveConformance, MixerLeakingOnlyOnMeasuredLengthsIsCaughtDuringTheMeasurementWithTheBatch) {
  const Outcome o = forget(kLateLeak, steps(30) + "--set mixer.after=0 --set mixer.min_len=129 --granularity 32");
  ASSERT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("live causal checks during training:"), std::string::npos) << o.output;
  EXPECT_TRUE(std::regex_search(o.output, std::regex("plugin 'fixture_late_leak' failed the conformance check 'causal' "
                                                     "during the measurement at batch [0-9]+: ")))
      << o.output;
  expect_nothing_kept(o);
}

// Both directions: the same plugin whose switch lies beyond the run's calls
// is an honest causal attention and passes, checks recorded.
TEST_F(LiveConformance, LateLeakMixerWhoseSwitchIsBeyondTheRunPasses) {
  const Outcome o = forget(kLateLeak, steps(100) + "--set mixer.after=1000000000 --granularity 16");
  ASSERT_EQ(o.code, 0) << o.output;
  const json j = json::parse(read_text(out() / "forgetting.json"));
  const json& c = j.at("conformance").at("live_causal");
  EXPECT_EQ(c.at("training").at("calls"), 100);
  EXPECT_EQ(c.at("measurement").at("calls").get<int64_t>(), 16);
  EXPECT_GE(c.at("measurement").at("checks").get<int64_t>(), 1);  // each of 16 at 1/2: 1 - 2^-16
  for (const char* phase : {"training", "measurement"})
    EXPECT_LT(c.at(phase).at("max_difference_over_tolerance").get<double>(), 1.0) << phase;
  EXPECT_TRUE(fs::exists(out() / "model.pt"));
}

// The built-in causal mixers that are not attention (an FFT convolution and a
// chunked scan, whose rounding mixes positions) pass with the checks on.
TEST_F(LiveConformance, BuiltInCausalS4dAndMamba2PassWithTheLiveChecks) {
  for (const std::string plugin : {"s4d", "mamba2"}) {
    fs::remove_all(out());
    const Outcome o = forget(plugin, steps(60) + "--granularity 16");
    ASSERT_EQ(o.code, 0) << plugin << "\n" << o.output;
    const json j = json::parse(read_text(out() / "forgetting.json"));
    const json& c = j.at("conformance").at("live_causal");
    EXPECT_GE(c.at("measurement").at("checks").get<int64_t>(), 1) << plugin;
    for (const char* phase : {"training", "measurement"})
      EXPECT_LT(c.at(phase).at("max_difference_over_tolerance").get<double>(), 1.0) << plugin << " " << phase;
  }
}

}  // namespace
}  // namespace lra::test
