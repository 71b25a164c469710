// Issue 32: a causal-only mixer on a CLS-pooled task. The host's probe finds
// that the SDK's retention example (sdk/examples/python/retention.py) does not
// read ahead, puts the summary after each example's last real token, and the
// mixer learns smoke ListOps well above the majority class without any change
// to the model or pooling (what LRA's placement made impossible: docs/rules.md). The built-in
// mixers keep LRA's placement; plain verify refuses a summary position that
// does not fit the pooling.
#include <filesystem>
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

const std::string kRetention = std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/retention.py:Retention";

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The smoke preset with its model, pooling and data as they are; only the run
// is shortened to 300 of its 2,000 steps (a Python mixer trains at about 3
// steps/s here). The whole preset reaches 41.70% on the test split
// (docs/measured/cpu/smoke-listops-retention.result.json).
TEST(CausalSummary, ACausalOnlyPythonMixerLearnsSmokeListOpsWithNothingButTheStepsChanged) {
  TempDir d;
  const fs::path out = d.path() / "retention";
  const auto o = lrahost("run --plugin '" + kRetention + "' --task listops --preset smoke --threads 2 --data-dir " +
                         (d.path() / "data").string() + " --out " + out.string() +
                         " --set train.steps=300 --set train.eval_every=100");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(has(o.output, "summary: after each example's last real token (Retention does not read ahead")) << o.output;
  EXPECT_FALSE(has(o.output, "not learning")) << o.output;
  const json r = json::parse(read_text(out / "result.json"));
  EXPECT_EQ(r["model"]["summary"], "after_last");
  EXPECT_EQ(r["config"]["model"]["pooling"], "cls");
  EXPECT_EQ(r["overrides"].size(), 2u) << r["overrides"].dump();  // the two train.* above, nothing else
  // Well above the majority class: 1,000 test examples, so 8 points is far
  // beyond chance (about 7 standard deviations at a majority rate near 12%).
  const double accuracy = r["metrics"]["test_accuracy"].get<double>();
  const double majority = r["metrics"]["majority_class_rate"].get<double>();
  EXPECT_GT(accuracy, majority + 0.08) << "test " << accuracy << ", majority class " << majority;
  const auto v = lrahost("verify " + (out / "result.json").string());
  EXPECT_EQ(v.code, 0) << v.output;
}

TEST(CausalSummary, BuiltInMixersKeepLrasPlacementAndVerifyChecksTheField) {
  TempDir d;
  const std::string data = (d.path() / "data").string();
  ASSERT_EQ(lrahost(tiny_run_args(data, (d.path() / "cls").string())).code, 0);
  ASSERT_EQ(lrahost(tiny_run_args(data, (d.path() / "mean").string()) + " --set model.pooling=mean").code, 0);
  json cls = json::parse(read_text(d.path() / "cls" / "result.json"));
  const json mean = json::parse(read_text(d.path() / "mean" / "result.json"));
  EXPECT_EQ(cls["model"]["summary"], "first");
  EXPECT_EQ(mean["model"]["summary"], "mean");

  // Edited and re-sealed: a name the host does not know, and one the pooling cannot have.
  cls["model"]["summary"] = "last";
  cls.erase("digest");
  lra::host::write_result(d.path() / "unknown", lra::host::seal(cls));
  auto v = lrahost("verify " + (d.path() / "unknown").string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_TRUE(has(v.output, "model.summary must be \"first\", \"after_last\" or \"mean\", found \"last\"")) << v.output;
  json moved = mean;
  moved["model"]["summary"] = "after_last";
  moved.erase("digest");
  lra::host::write_result(d.path() / "moved", lra::host::seal(moved));
  v = lrahost("verify " + (d.path() / "moved").string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_TRUE(has(v.output, "model.summary \"after_last\" does not fit config.model.pooling \"mean\"")) << v.output;
  // A result from before the field (no model.summary) still verifies.
  json older = mean;
  older["model"].erase("summary");
  older.erase("digest");
  lra::host::write_result(d.path() / "older", lra::host::seal(older));
  EXPECT_EQ(lrahost("verify " + (d.path() / "older").string()).code, 0);
}

// The measured whole-preset run (docs/mixers.md) is an honest result: it verifies.
TEST(CausalSummary, TheMeasuredRetentionRunVerifies) {
  const std::string file = std::string(LRA_SOURCE_DIR) + "/docs/measured/cpu/smoke-listops-retention.result.json";
  const json r = json::parse(read_text(file));
  EXPECT_EQ(r["model"]["summary"], "after_last");
  EXPECT_TRUE(r["overrides"].empty());
  const auto v = lrahost("verify " + file);
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_TRUE(has(v.output, "open, valid")) << v.output;
}

}  // namespace
}  // namespace lra::test
