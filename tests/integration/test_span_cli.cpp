// `lrahost span` end to end: a tiny trained run measured through the binary,
// its span.json checked against an independent recomputation (softmax of the
// trained q/k in float64, excluded keys dropped before the softmax, one
// example at a time), and the errors: a mixer without attention
// probabilities (exit 3), a missing run or model.pt, foreign data (exit 5).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>
#include <ATen/ATen.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "../support/data_fixtures.h"
#include "runs/trained_run.h"
#include "cli_harness.h"
#include "lra/mixer.h"
#include "tiny_run.h"
#include "train/batches.h"
#include "train/trainer.h"

using lra::test::lrahost;
using lra::test::read_text;
using lra::test::TempDir;
using lra::test::tiny_run_args;
using nlohmann::json;

namespace {

json load_json(const std::filesystem::path& p) { return json::parse(read_text(p)); }

// Keeps what the block hands its mixer, then lets the trained mixer run.
class CapturingMixer final : public lra::Mixer {
 public:
  explicit CapturingMixer(std::shared_ptr<lra::Mixer> inner) : inner_(std::move(inner)) {}
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    x_ = x.detach().clone();
    mask_ = mask.clone();
    return inner_->forward(x, mask);
  }
  const lra::Mixer& inner() const { return *inner_; }
  at::Tensor x_, mask_;

 private:
  std::shared_ptr<lra::Mixer> inner_;
};

struct Recomputed {
  double span = 0;
  std::vector<std::vector<double>> per_head;  // [layer][head]
  int64_t sequences = 0;
};

// The span of `indices` computed without the recorded probabilities: for each
// example alone, each layer's softmax(q k^T / sqrt(dh)) in float64 from the
// mixer's input and the trained projection weights, over the counted keys only.
Recomputed recompute(const std::filesystem::path& run_dir, const std::string& data_dir, const json& indices,
                     const json& result) {
  using namespace lra::host;
  const RunRecord run = read_run_record(run_dir);
  const LoadedPlugin& mixer = open_run_mixer(run);
  const LoadedPlugin& task = open_plugin(run.task, LRA_KIND_TASK);
  const LoadedData data = load_run_data(run, task, data_dir, 1);
  Classifier model = load_trained_classifier(run, mixer, data.dataset.info, torch::kCPU);

  // The reloaded model is the trained one: it reproduces the run's test accuracy.
  const auto test = evaluate(model, data.dataset.test, run.model.max_len, 16, torch::kCPU);
  EXPECT_DOUBLE_EQ(test.accuracy, result["metrics"]["test_accuracy"].get<double>());
  model->eval();

  std::vector<std::shared_ptr<CapturingMixer>> captures;
  for (Block block : model->blocks()) {  // a copy of the holder shares the block
    captures.push_back(std::make_shared<CapturingMixer>(block->mixer));
    block->mixer = captures.back();
  }
  const bool cls = run.model.pooling == "cls";
  const int64_t H = run.model.heads, dh = run.model.qkv_dim / H, layers = run.model.layers;
  Recomputed r;
  r.per_head.assign(layers, std::vector<double>(H, 0.0));
  torch::NoGradGuard no_grad;
  for (const auto& index : indices) {
    const Batch b = make_batch(data.dataset.val, {index.get<int64_t>()}, run.model.max_len);
    model->forward(b.ids, b.mask, b.ids2, b.mask2);
    const int64_t sequences = captures[0]->x_.size(0);  // 2 for a Retrieval pair
    for (int64_t s = 0; s < sequences; ++s) {
      double sequence_sum = 0;
      for (int64_t l = 0; l < layers; ++l) {
        const auto& c = *captures[l];
        auto params = c.inner().named_parameters();
        const auto x = c.x_[s].to(torch::kDouble);  // [L, D]
        const auto q = x.matmul(params["proj.q.weight"].to(torch::kDouble).t());
        const auto k = x.matmul(params["proj.k.weight"].to(torch::kDouble).t());
        std::vector<int64_t> counted;
        for (int64_t i = 0; i < x.size(0); ++i)
          if (c.mask_[s][i].item<bool>() && !(cls && i == 0)) counted.push_back(i);
        const auto pos = at::tensor(counted);
        const auto distance = (pos.unsqueeze(1) - pos.unsqueeze(0)).abs().to(torch::kDouble);
        for (int64_t h = 0; h < H; ++h) {
          const auto qh = q.narrow(1, h * dh, dh).index_select(0, pos);
          const auto kh = k.narrow(1, h * dh, dh).index_select(0, pos);
          const auto p = at::softmax(qh.matmul(kh.t()) / std::sqrt(static_cast<double>(dh)), -1);
          const double head_span = (p * distance).sum(-1).mean().item<double>();
          r.per_head[l][h] += head_span;
          sequence_sum += head_span;
        }
      }
      r.span += sequence_sum / static_cast<double>(layers * H);
      ++r.sequences;
    }
  }
  r.span /= static_cast<double>(r.sequences);
  for (auto& heads : r.per_head)
    for (auto& v : heads) v /= static_cast<double>(r.sequences);
  return r;
}

void expect_matches(const json& span, const Recomputed& r) {
  EXPECT_EQ(span["counts"]["sequences"].get<int64_t>(), r.sequences);
  EXPECT_NEAR(span["span"].get<double>(), r.span, 1e-4 * std::max(1.0, r.span));
  const auto& per_head = span["per_head"];
  ASSERT_EQ(per_head.size(), r.per_head.size());
  for (size_t l = 0; l < r.per_head.size(); ++l) {
    ASSERT_EQ(per_head[l].size(), r.per_head[l].size());
    for (size_t h = 0; h < r.per_head[l].size(); ++h)
      EXPECT_NEAR(per_head[l][h].get<double>(), r.per_head[l][h], 1e-4 * std::max(1.0, r.per_head[l][h]))
          << "layer " << l << " head " << h;
  }
}

// One tiny trained two-layer transformer shared by the tests of this suite.
class SpanCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("LRA_PLUGIN_PATH", LRA_PLUGIN_DIR, 1);  // for this process's own plugin loading
    dir_ = new TempDir();
    auto o = lrahost(tiny_run_args(data(), run().string()) + " --set model.layers=2");
    ASSERT_EQ(o.code, 0) << o.output;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string data() { return dir_->str() + "/data"; }
  static std::filesystem::path run() { return dir_->path() / "run"; }
  static TempDir* dir_;
};
TempDir* SpanCli::dir_ = nullptr;

}  // namespace

TEST_F(SpanCli, ReportsTheSpanPerLayerAndHeadAndMatchesAnIndependentRecomputation) {
  auto o =
      lrahost("span --run " + run().string() + " --samples 16 --batch 5 --seed 3 --threads 1 --data-dir " + data());
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("span: transformer on listops"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("required attention span (attention probabilities)"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("head 1"), std::string::npos) << o.output;

  const json s = load_json(run() / "span.json");  // the default --out
  EXPECT_EQ(s["schema"], "lrahost.span/v1");
  EXPECT_EQ(s["plugin"]["name"], "transformer");
  EXPECT_TRUE(s["plugin"]["same_file_as_run"].get<bool>());
  EXPECT_EQ(s["task"], "listops");
  EXPECT_EQ(s["samples"], 16);
  EXPECT_EQ(s["samples_requested"], 16);
  EXPECT_EQ(s["validation_examples"], 40);
  EXPECT_FALSE(s["all_validation_examples"].get<bool>());
  EXPECT_EQ(s["seed"], 3);
  const double span = s["span"];
  EXPECT_TRUE(std::isfinite(span));
  EXPECT_GT(span, 0.0);
  EXPECT_LT(span, 48.0);  // below the longest possible distance
  ASSERT_EQ(s["per_layer"].size(), 2u);
  ASSERT_EQ(s["per_head"].size(), 2u);
  for (const auto& heads : s["per_head"]) EXPECT_EQ(heads.size(), 2u);
  // With equal query counts per head the overall value is the mean of the per-layer values.
  EXPECT_NEAR(span, (s["per_layer"][0].get<double>() + s["per_layer"][1].get<double>()) / 2, 1e-9);
  EXPECT_EQ(s["counts"]["sequences"], 16);
  EXPECT_GT(s["counts"]["query_rows"].get<int64_t>(), 16 * 2 * 2 * 3);
  EXPECT_GT(s["excluded_mass"].get<double>(), 0.0);  // the CLS column held some mass
  // The stated choices (docs/span.md, "The choices").
  const auto& c = s["choices"];
  for (const char* key : {"distance", "padding", "cls", "attention_dropout", "averaging", "sampling"})
    EXPECT_TRUE(c.contains(key) && c[key].is_string()) << key;
  EXPECT_TRUE(c["cls_token"].get<bool>());
  EXPECT_TRUE(c["paired_inputs"].is_null());
  EXPECT_EQ(c["sequence_length"], 49);
  std::set<int64_t> distinct;
  for (const auto& i : s["indices"]) {
    EXPECT_GE(i.get<int64_t>(), 0);
    EXPECT_LT(i.get<int64_t>(), 40);
    distinct.insert(i.get<int64_t>());
  }
  EXPECT_EQ(distinct.size(), 16u);

  expect_matches(s, recompute(run(), data(), s["indices"], load_json(run() / "result.json")));

  // The grouping into batches does not change the value; another seed draws other examples.
  const auto one = (dir_->path() / "one.json").string();
  ASSERT_EQ(lrahost("span --run " + run().string() + " --samples 16 --batch 1 --seed 3 --threads 1 --data-dir " +
                    data() + " --out " + one).code, 0);
  EXPECT_NEAR(load_json(one)["span"].get<double>(), span, 1e-5);
  EXPECT_EQ(load_json(one)["indices"], s["indices"]);
  ASSERT_EQ(lrahost("span --run " + run().string() + " --samples 16 --seed 4 --threads 1 --data-dir " + data() +
                    " --out " + one).code, 0);
  EXPECT_NE(load_json(one)["indices"], s["indices"]);
}

TEST_F(SpanCli, MoreSamplesThanTheValidationSetUsesAllAndSaysSo) {
  const auto out = dir_->path() / "all.json";
  auto o = lrahost("span --run " + run().string() + " --samples 1000 --threads 1 --data-dir " + data() + " --out " +
                   out.string());
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("using all 40"), std::string::npos) << o.output;
  const json s = load_json(out);
  EXPECT_EQ(s["samples"], 40);
  EXPECT_EQ(s["samples_requested"], 1000);
  EXPECT_TRUE(s["all_validation_examples"].get<bool>());
  EXPECT_EQ(s["indices"].size(), 40u);
}

TEST_F(SpanCli, AMissingOrBrokenRunIsADataError) {
  const auto out = dir_->path() / "never.json";
  auto missing = lrahost("span --run " + (dir_->path() / "nope").string() + " --out " + out.string());
  EXPECT_EQ(missing.code, 5) << missing.output;
  EXPECT_NE(missing.output.find("does not exist"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("result.json and model.pt"), std::string::npos) << missing.output;

  const auto copy = dir_->path() / "no-model";
  std::filesystem::create_directories(copy);
  std::filesystem::copy_file(run() / "result.json", copy / "result.json");
  auto no_model = lrahost("span --run " + copy.string() + " --out " + out.string());
  EXPECT_EQ(no_model.code, 5) << no_model.output;
  EXPECT_NE(no_model.output.find("model.pt is missing"), std::string::npos) << no_model.output;

  auto no_result = lrahost("span --run " + (dir_->path() / "data").string() + " --out " + out.string());
  EXPECT_EQ(no_result.code, 5) << no_result.output;
  EXPECT_NE(no_result.output.find("holds no result.json"), std::string::npos) << no_result.output;

  lra::test::write_text(copy / "model.pt", "not an archive");
  auto bad_model = lrahost("span --run " + copy.string() + " --threads 1 --data-dir " + data() + " --out " + out.string());
  EXPECT_EQ(bad_model.code, 5) << bad_model.output;
  EXPECT_NE(bad_model.output.find("model.pt does not fit"), std::string::npos) << bad_model.output;

  json r = load_json(run() / "result.json");
  r["config"]["model"].erase("heads");
  lra::test::write_text(copy / "result.json", r.dump());
  auto bad_result = lrahost("span --run " + copy.string() + " --out " + out.string());
  EXPECT_EQ(bad_result.code, 5) << bad_result.output;
  EXPECT_NE(bad_result.output.find("config.model.heads: missing"), std::string::npos) << bad_result.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// plugin.file in result.json is not trusted: a file that is not the recorded
// build (here a plugin whose static constructor aborts) is never loaded.
TEST_F(SpanCli, APluginFileThatIsNotTheRecordedBuildIsNeverLoaded) {
  const auto copy = dir_->path() / "edited-plugin";
  std::filesystem::create_directories(copy);
  std::filesystem::copy_file(run() / "model.pt", copy / "model.pt");
  json r = load_json(run() / "result.json");
  r["plugin"]["file"] = std::string(LRA_FIXTURE_PLUGIN_DIR) + "/fixture_abi_next_major.so";
  lra::test::write_text(copy / "result.json", r.dump());
  auto o = lrahost("span --run " + copy.string() + " --samples 4 --threads 1 --data-dir " + data() + " --out " +
                   (copy / "span.json").string());
  // Not loaded (it would have aborted): the installed transformer, the recorded build, measures.
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("span: transformer"), std::string::npos) << o.output;
  EXPECT_TRUE(load_json(copy / "span.json")["plugin"]["same_file_as_run"].get<bool>());

  // A plugin name that is a path, with the recorded file gone: refused, nothing loaded.
  r["plugin"]["file"] = (dir_->path() / "gone.so").string();
  r["plugin"]["name"] = std::string(LRA_FIXTURE_PLUGIN_DIR) + "/fixture_abi_next_major.so";
  lra::test::write_text(copy / "result.json", r.dump());
  auto refused = lrahost("span --run " + copy.string() + " --samples 4 --threads 1 --data-dir " + data() + " --out " +
                         (copy / "span2.json").string());
  EXPECT_EQ(refused.code, 3) << refused.output;
  EXPECT_NE(refused.output.find("is installed, and the file the run recorded"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("--plugin PATH"), std::string::npos) << refused.output;
}

TEST_F(SpanCli, DataOtherThanTheRunsIsRefused) {
  const auto copy = dir_->path() / "other-data";
  std::filesystem::create_directories(copy);
  std::filesystem::copy_file(run() / "model.pt", copy / "model.pt");
  json r = load_json(run() / "result.json");
  r["task"]["data_fingerprint"] = "sha256:0000";
  lra::test::write_text(copy / "result.json", r.dump());
  auto o = lrahost("span --run " + copy.string() + " --threads 1 --data-dir " + data());
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("fingerprint"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("--data-dir"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(copy / "span.json"));
}

// Issue 32: span for any mixer. A mixer without attention probabilities gets
// the gradient span alone. Block-local attention with blocks of 4 reads only
// its own block, so every row's full (coverage 1) radius is at most 3 tokens,
// while the Transformer's reaches further: the gradient span sees the window.
TEST_F(SpanCli, AMixerWithoutAttentionProbabilitiesGetsItsGradientSpanWhichSeesItsWindow) {
  const auto local = dir_->path() / "local";
  std::string args = tiny_run_args(data(), local.string());
  args.replace(args.find("--plugin transformer"), 20, "--plugin local");
  ASSERT_EQ(lrahost(args + " --set train.steps=2 --set mixer.block_size=4").code, 0);
  auto o = lrahost("span --run " + local.string() + " --samples 16 --coverage 1 --threads 1 --data-dir " + data());
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("required attention span: not defined"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("gradient span"), std::string::npos) << o.output;
  const json s = json::parse(read_text(local / "span.json"));
  EXPECT_TRUE(s["span"].is_null()) << s.dump(2);
  EXPECT_NE(s["attention_span"].get<std::string>().find("does not declare attention_probs"), std::string::npos);
  const json& g = s["gradient"];
  EXPECT_GT(g["counts"]["query_rows"].get<int64_t>(), 0) << g.dump(2);
  EXPECT_GT(g["radius"].get<double>(), 0.0) << "a block of 4 reads its neighbours";
  EXPECT_LE(g["radius"].get<double>(), 3.0) << g.dump(2);
  for (const auto& r : g["per_layer_radius"]) EXPECT_LE(r.get<double>(), 3.0) << g.dump(2);
  EXPECT_LE(g["distance"].get<double>(), 3.0) << g.dump(2);

  auto t = lrahost("span --run " + run().string() + " --samples 16 --coverage 1 --threads 1 --out " +
                   (dir_->path() / "transformer-span.json").string() + " --data-dir " + data());
  ASSERT_EQ(t.code, 0) << t.output;
  const json ts = json::parse(read_text(dir_->path() / "transformer-span.json"));
  EXPECT_TRUE(ts["span"].is_number()) << "the attention span stays for a mixer with probabilities";
  EXPECT_GT(ts["gradient"]["radius"].get<double>(), 3.0) << ts["gradient"].dump(2);
}

TEST(SpanCliRetrieval, EachDocumentOfAPairIsItsOwnSequence) {
  setenv("LRA_PLUGIN_PATH", LRA_PLUGIN_DIR, 1);
  TempDir dir;
  lra::test::write_aan_fixture(dir.path(), 48, 12, 12, 2);
  const auto run = dir.path() / "run";
  auto t = lrahost("run --plugin transformer --task retrieval --preset smoke --threads 1 --data-dir " + dir.str() +
                   " --out " + run.string() +
                   " --set train.steps=4 --set train.eval_every=2 --set train.warmup=2 --set train.batch_size=8"
                   " --set model.max_len=512 --set data.max_length=512 --set model.layers=1 --set model.d_model=32"
                   " --set model.qkv_dim=32 --set model.ffn_dim=64");
  ASSERT_EQ(t.code, 0) << t.output;
  auto o = lrahost("span --run " + run.string() + " --samples 5 --batch 2 --threads 1 --data-dir " + dir.str());
  ASSERT_EQ(o.code, 0) << o.output;
  const json s = load_json(run / "span.json");
  EXPECT_EQ(s["samples"], 5);
  EXPECT_EQ(s["counts"]["sequences"], 10);  // two documents per pair
  EXPECT_FALSE(s["choices"]["cls_token"].get<bool>());
  EXPECT_TRUE(s["choices"]["paired_inputs"].is_string());
  expect_matches(s, recompute(run, dir.str(), s["indices"], load_json(run / "result.json")));
}
