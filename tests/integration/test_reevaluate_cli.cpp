// Issue 31: re-evaluation that honest work always passes and the judged code
// cannot fool. Honest tiny runs of every task and of every built-in mixer
// family re-evaluate as valid (the model is rebuilt from the recorded
// configuration through the manifest's own field table: padding_mask and any
// later field included); a plugin that answers from the inputs without its
// weights is caught by the fresh-weights pass; the verifier counts the
// parameters itself.
#include <algorithm>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/data_fixtures.h"
#include "cli_harness.h"
#include "results/result.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool sandbox_works() { return std::system("bwrap --ro-bind / / --unshare-all true >/dev/null 2>&1") == 0; }

class ReevaluateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
  }
  // A few steps of the smoke preset: enough for a real result and model.pt.
  fs::path train(const std::string& plugin, const std::string& task, const std::string& name,
                 const std::string& extra = "") {
    const fs::path out = d_.path() / "runs" / name;
    const auto o = lrahost("run --plugin " + plugin + " --task " + task + " --preset smoke --threads 2 --seed 0 " +
                           "--data-dir " + (d_.path() / "data").string() + " --out " + out.string() + " " + extra);
    EXPECT_EQ(o.code, 0) << o.output;
    return out;
  }
  // submit the runs folder, re-evaluate it; returns the verify output.
  Outcome submit_and_reevaluate(const fs::path& checked) {
    const fs::path bundle = d_.path() / "sub.tar";
    fs::remove(bundle);
    auto s = lrahost("submit " + (d_.path() / "runs").string() + " --out " + bundle.string());
    EXPECT_EQ(s.code, 0) << s.output;
    return lrahost("verify --reevaluate " + bundle.string() + " --out " + checked.string() + " --threads 2 --data-dir " +
                   (d_.path() / "data").string());
  }
  TempDir d_;
};

const char* kFewSteps = "--set train.steps=4 --set train.eval_every=4 --set train.warmup=2 --set train.steps_per_cycle=4";

TEST_F(ReevaluateCli, AnHonestResultOfEverySixTasksReevaluatesValid) {
  // One data folder for all six: the release layouts of the downloaded tasks
  // side by side, the generated tasks generated under it on first use.
  const fs::path data = d_.path() / "data";
  write_imdb_fixture(data, 30, 20, 1);
  write_aan_fixture(data, 64, 16, 24, 2);
  write_cifar_fixture(data, 20, 30, 3);
  const std::vector<std::pair<std::string, std::string>> tasks = {
      {"listops", "--set data.test_size=200"},
      {"text", ""},
      {"retrieval", ""},
      {"image", ""},
      {"pathfinder", "--set data.images=400"},
      {"pathx", "--set train.batch_size=2 --set train.eval_batch_size=2"}};
  for (const auto& [task, extra] : tasks) {
    SCOPED_TRACE(task);
    train("transformer", task, task, std::string(kFewSteps) + " " + extra);
  }
  // The image tasks record LRA's zero-pixel mask: the field the old re-evaluation dropped.
  for (const std::string task : {"image", "pathfinder", "pathx"})
    EXPECT_EQ(json::parse(read_text(d_.path() / "runs" / task / "result.json"))["config"]["model"]["padding_mask"],
              "nonzero_tokens");
  const fs::path checked = d_.path() / "checked";
  auto v = submit_and_reevaluate(checked);
  EXPECT_EQ(v.code, 0) << v.output;
  for (const auto& [task, extra] : tasks) {
    (void)extra;
    SCOPED_TRACE(task);
    // submit names each run by its task and seed.
    const std::string run = task + "-seed-0";
    EXPECT_NE(v.output.find(run + ": re-evaluated, valid"), std::string::npos) << v.output;
    const json rep = json::parse(read_text(checked / "runs" / run / "reevaluation.json"));
    EXPECT_TRUE(rep["valid"].get<bool>()) << rep.dump(2);
    EXPECT_FALSE(rep["fresh_weights"]["flagged"].get<bool>()) << rep.dump(2);
    EXPECT_TRUE(rep["test"]["same_device_and_precision"].get<bool>()) << rep.dump(2);
    EXPECT_EQ(rep.dump().find("log_tail"), std::string::npos) << rep.dump(2);
    const json result = json::parse(read_text(checked / "runs" / run / "result.json"));
    EXPECT_EQ(rep["test"]["recomputed_accuracy"].get<double>(), result["metrics"]["test_accuracy"].get<double>());
    EXPECT_EQ(rep["parameters"]["reference"], result["rules"]["reference_params"]);
    EXPECT_LE(rep["parameters"]["counted"].get<int64_t>(), rep["parameters"]["budget"].get<int64_t>());
    EXPECT_GT(rep["parameters"]["counted"].get<int64_t>(), 0);
  }
}

TEST_F(ReevaluateCli, AnHonestResultOfEveryBuiltInMixerFamilyReevaluatesValid) {
  const auto plugins = every_mixer_plugin();
  ASSERT_GE(plugins.size(), 12u);
  for (const auto& [p, spec] : plugins) {
    SCOPED_TRACE(p);
    train(spec, "listops", p, std::string(kFewSteps) + " --set data.test_size=100");
  }
  const fs::path checked = d_.path() / "checked";
  auto v = submit_and_reevaluate(checked);
  EXPECT_EQ(v.code, 0) << v.output;
  // One valid report per plugin (the runs share task and seed, so submit numbers them).
  std::set<std::string> valid;
  for (const auto& e : fs::directory_iterator(checked / "runs")) {
    const json rep = json::parse(read_text(e.path() / "reevaluation.json"));
    const json result = json::parse(read_text(e.path() / "result.json"));
    EXPECT_TRUE(rep["valid"].get<bool>()) << e.path() << "\n" << rep.dump(2);
    if (rep["valid"].get<bool>()) valid.insert(result["plugin"]["name"].get<std::string>());
  }
  EXPECT_EQ(valid.size(), plugins.size()) << v.output;
}

// Issue 32: where the head reads is the host's probe's to say, in the sandbox
// too. An honest causal-only Python mixer (its summary after each example's
// last token) re-evaluates valid with the probe agreeing; a transformer
// result edited to claim that position is refused by name.
TEST_F(ReevaluateCli, AdversarialTheSummaryPositionIsProbedAgainInTheSandbox) {
  const std::string retention = std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/retention.py:Retention";
  const fs::path honest = train(retention, "listops", "retention", std::string(kFewSteps) + " --set data.test_size=100");
  EXPECT_EQ(json::parse(read_text(honest / "result.json"))["model"]["summary"], "after_last");
  auto v = submit_and_reevaluate(d_.path() / "checked");
  EXPECT_EQ(v.code, 0) << v.output;
  const json rep = json::parse(read_text(d_.path() / "checked" / "runs" / "listops-seed-0" / "reevaluation.json"));
  EXPECT_NE(rep["facts"].dump().find("summary position probed through the mixer process: after_last, as recorded"),
            std::string::npos) << rep.dump(2);

  fs::remove_all(honest);
  const fs::path run = train("transformer", "listops", "moved", std::string(kFewSteps) + " --set data.test_size=100");
  json r = json::parse(read_text(run / "result.json"));
  EXPECT_EQ(r["model"]["summary"], "first");
  r["model"]["summary"] = "after_last";
  r.erase("digest");
  r.erase("signature");
  lra::host::write_result(run, lra::host::seal(r));
  v = submit_and_reevaluate(d_.path() / "checked-moved");
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("model.summary is \"after_last\", but the host's probe of the plugin, built as the run "
                          "built it, gives \"first\""), std::string::npos) << v.output;
}

// The attack of issue 31: the plugin's library constructor answers ListOps
// from the inputs file the old sandboxed evaluation read, writes the
// predictions where that verifier expected them and exits; the submitter
// writes 100% into the result and re-seals it. Under the process boundary
// (issue 43) there is no inputs file and no predictions file: the verifier
// computes the predictions with its own model, and the number falls.
TEST_F(ReevaluateCli, AdversarialPredictionsFromTheInputsFileHaveNoInputsFileToReadNow) {
  const fs::path run = train(fixture_plugin("fixture_oracle"), "listops", "oracle",
                             std::string(kFewSteps) + " --set data.test_size=200");
  json r = json::parse(read_text(run / "result.json"));
  const double honest = r["metrics"]["test_accuracy"].get<double>();
  ASSERT_LT(honest, 0.9);
  r["metrics"]["test_accuracy"] = 1.0;
  r.erase("digest");
  r.erase("signature");
  lra::host::write_result(run, lra::host::seal(r));
  const fs::path checked = d_.path() / "checked";
  auto v = submit_and_reevaluate(checked);
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("metrics.test_accuracy is 100.00%, the submitted model scores"), std::string::npos)
      << v.output;
  const json rep = json::parse(read_text(checked / "runs" / "listops-seed-0" / "reevaluation.json"));
  EXPECT_EQ(rep["test"]["recomputed_accuracy"].get<double>(), honest) << rep.dump(2);
  // The honest part of the plugin is judged as it is: its fresh weights are not above chance.
  EXPECT_FALSE(rep["fresh_weights"]["flagged"].get<bool>()) << rep.dump(2);
  EXPECT_EQ(rep.dump().find("oracle:"), std::string::npos) << rep.dump(2);
  EXPECT_EQ(read_text(checked / "logs" / "listops-seed-0-mixer.log").find("oracle: answered"), std::string::npos);
}

// A result that claims a smaller reference model (and so a larger budget
// share) is refused: the verifier counts both models itself.
TEST_F(ReevaluateCli, AdversarialASelfReportedBudgetIsRecountedFromTheWeights) {
  const fs::path run = train("transformer", "listops", "budget", std::string(kFewSteps) + " --set data.test_size=100");
  json r = json::parse(read_text(run / "result.json"));
  r["rules"]["reference_params"] = 1000000000000;
  r["rules"]["param_budget"] = 1100000000000;
  r.erase("digest");
  r.erase("signature");
  lra::host::write_result(run, lra::host::seal(r));
  auto v = submit_and_reevaluate(d_.path() / "checked");
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("rules.reference_params is 1000000000000, the reference Transformer of the recorded "
                          "configuration has"), std::string::npos) << v.output;
}

// A result that moves a decayed matrix into s4d's no-decay group keeps every
// rule plain verify can check (each parameter once, the element total, a hint
// only lowers decay), but it is not what the plugin's hints give: the
// sandbox recomputes the groups from the plugin and the record must match.
TEST_F(ReevaluateCli, AdversarialOptimizerGroupsAreRecomputedFromThePlugin) {
  const fs::path run = train("s4d", "listops", "s4d", std::string(kFewSteps) + " --set data.test_size=100");
  json r = json::parse(read_text(run / "result.json"));
  json& groups = r["optimizer"]["groups"];
  ASSERT_EQ(groups.size(), 2u) << groups.dump();
  const int64_t moved = r["config"]["model"]["ffn_dim"].get<int64_t>() * r["config"]["model"]["d_model"].get<int64_t>();
  json& names = groups[0]["names"];
  names.erase(std::find(names.begin(), names.end(), json("block0.fc1.weight")));
  groups[1]["names"].push_back("block0.fc1.weight");
  groups[0]["elements"] = groups[0]["elements"].get<int64_t>() - moved;
  groups[1]["elements"] = groups[1]["elements"].get<int64_t>() + moved;
  groups[0]["parameters"] = groups[0]["parameters"].get<int64_t>() - 1;
  groups[1]["parameters"] = groups[1]["parameters"].get<int64_t>() + 1;
  r.erase("digest");
  r.erase("signature");
  lra::host::write_result(run, lra::host::seal(r));
  auto plain = lrahost("verify " + (run / "result.json").string());
  ASSERT_EQ(plain.code, 0) << "the forgery keeps the rules a file alone can show: " << plain.output;
  auto v = submit_and_reevaluate(d_.path() / "checked");
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("optimizer in result.json is not what the plugin's optimizer hints give"), std::string::npos)
      << v.output;
}

// A recall suite plots accuracy against state size: a result that records a
// smaller state than its mixer keeps (zoology#34's complaint, in reverse) is
// refused, the verifier's own measurement through the mixer process naming both.
TEST_F(ReevaluateCli, AForgedStateSizeIsRefused) {
  const fs::path run = train("transformer", "mqar", "forged",
                             std::string(kFewSteps) + " --set data.train_grid=64x4x64 --set data.val_grid=64x4x10 "
                                                      "--set data.test_grid=64x4x10");
  json r = json::parse(read_text(run / "result.json"));
  ASSERT_TRUE(r["state_size"]["measured"].get<bool>()) << r["state_size"].dump();
  const int64_t bytes = r["state_size"]["per_length"][0]["bytes"].get<int64_t>();
  r["state_size"]["per_length"][0]["bytes"] = bytes / 4;
  r.erase("digest");
  write_text(run / "result.json", lra::host::seal(r).dump(2));
  const fs::path checked = d_.path() / "checked";
  auto v = submit_and_reevaluate(checked);
  EXPECT_EQ(v.code, 4) << v.output;
  const json rep = json::parse(read_text(checked / "runs" / "mqar-seed-0" / "reevaluation.json"));
  EXPECT_FALSE(rep["valid"].get<bool>());
  EXPECT_NE(rep.dump().find("state_size records"), std::string::npos) << rep.dump(2);
  EXPECT_EQ(rep["state_size"]["per_length"][0]["bytes"], bytes) << "the verifier's own number";
}

}  // namespace
}  // namespace lra::test

namespace lra::test {
namespace {

// Issue 45: a sequence task's bundle (MQAR) re-evaluates per scored position,
// for a C++ and a Python mixer alike: the verifier's own targets (never sent to
// the mixer process), a private set of the same cells drawn at a secret seed,
// and freshly initialised weights against the majority target.
TEST_F(ReevaluateCli, AnHonestMqarResultOfACAndAPythonMixerReevaluatesPerPosition) {
  // A small vocabulary, so that a few hundred updates learn recall (the transformer: about 93%).
  const std::string few =
      "--set train.steps=600 --set train.eval_every=600 --set train.steps_per_cycle=600 --set train.batch_size=32 "
      "--set data.vocab_size=128 --set data.train_grid=64x4x2000 --set data.val_grid=64x4x50 "
      "--set data.test_grid=64x4x150,64x8x150";
  train("transformer", "mqar", "cpp", few);
  train(std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/retention.py:Retention", "mqar", "python", few);
  const fs::path checked = d_.path() / "checked";
  auto v = submit_and_reevaluate(checked);
  EXPECT_EQ(v.code, 0) << v.output;
  int reports = 0;
  std::vector<double> accuracies;
  for (const auto& dir : fs::directory_iterator(checked / "runs")) {
    SCOPED_TRACE(dir.path().string());
    ++reports;
    const json rep = json::parse(read_text(dir.path() / "reevaluation.json"));
    const json result = json::parse(read_text(dir.path() / "result.json"));
    EXPECT_TRUE(rep["valid"].get<bool>()) << rep.dump(2);
    EXPECT_EQ(rep["test"]["scored"], "position");
    EXPECT_EQ(rep["test"]["recomputed_accuracy"].get<double>(), result["metrics"]["test_accuracy"].get<double>());
    EXPECT_EQ(rep["test"]["positions"], result["metrics"]["test_positions"]);
    EXPECT_EQ(rep["private"]["examples"], 300);  // the test grid's cells, at the secret seed
    EXPECT_FALSE(rep["private"]["flagged"].get<bool>()) << rep.dump(2);
    EXPECT_FALSE(rep["fresh_weights"]["flagged"].get<bool>()) << rep.dump(2);
    EXPECT_EQ(rep["parameters"]["reference"], result["rules"]["reference_params"]);
    // The state size, measured again through the mixer process: the recorded one.
    EXPECT_TRUE(rep["state_size"]["measured"].get<bool>()) << rep["state_size"].dump();
    EXPECT_EQ(rep["state_size"]["per_length"], result["state_size"]["per_length"]);
    accuracies.push_back(rep["test"]["recomputed_accuracy"].get<double>());
  }
  EXPECT_EQ(reports, 2);
  // Not a vacuous pass: at least one model answers most queries.
  EXPECT_GT(*std::max_element(accuracies.begin(), accuracies.end()), 0.5);
}

}  // namespace
}  // namespace lra::test
