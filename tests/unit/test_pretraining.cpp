// Self-pretraining's first phase (host/pretrain, docs/rules.md
// "Self-pretraining"): the objectives' losses, the masks' draws, the phase
// reading the training split's inputs alone, resuming it, and the
// manifest's [pretrain] section.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <spdlog/sinks/null_sink.h>
#include <torch/torch.h>

#include "common/sha256.h"
#include "lra/status.h"
#include "manifest/manifest.h"
#include "pretrain/objectives.h"
#include "pretrain/pretraining_phase.h"
#include "train/batches.h"

using namespace lra::host;
namespace fs = std::filesystem;

namespace {

const char* kManifest = R"(schema = "lrahost.manifest/v1"
name = "test/pretraining"
task = "listops"
[model]
layers = 1
d_model = 16
heads = 2
qkv_dim = 16
ffn_dim = 32
dropout = 0.1
attention_dropout = 0.1
pooling = "cls"
positions = "sinusoidal"
max_len = 12
[train]
steps = 10
batch_size = 8
lr = 0.01
schedule = "constant*linear_warmup"
warmup = 2
steps_per_cycle = 100
weight_decay = 0.1
betas = [0.9, 0.98]
eps = 1e-9
grad_clip = 0.0
eval_every = 5
checkpoint_every = 5
seed = 3
eval_batch_size = 8
[data]
[rules]
param_budget_ratio = 1.1
[pretrain]
mask_ratio = 0.3
steps = 12
batch_size = 8
lr = 0.01
schedule = "constant*linear_warmup"
warmup = 2
steps_per_cycle = 100
weight_decay = 0.0
betas = [0.9, 0.999]
eps = 1e-8
grad_clip = 0.0
eval_every = 4
checkpoint_every = 4
)";

lra::Split random_split(int64_t n, uint64_t seed, int32_t vocab = 10) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  lra::Split s;
  for (int64_t i = 0; i < n; ++i) {
    const int len = 4 + static_cast<int>(rng() % 9);
    for (int t = 0; t < len; ++t) s.tokens.push_back(1 + static_cast<int32_t>(rng() % (vocab - 1)));
    s.offsets.push_back(static_cast<int64_t>(s.tokens.size()));
    s.labels.push_back(static_cast<int32_t>(rng() % 2));
  }
  return s;
}

lra::Dataset dataset() {
  lra::Dataset d;
  d.info.vocab_size = 10;
  d.info.num_classes = 2;
  d.train = random_split(48, 1);
  d.val = random_split(16, 2);
  d.test = random_split(16, 3);
  return d;
}

Classifier classifier(const Manifest& m) {
  torch::manual_seed(m.train.seed);
  return Classifier(BackboneSpec{m.model, 10, 2, static_cast<uint64_t>(m.train.seed), false}, make_reference_attention);
}

struct TempDir {
  fs::path path;
  TempDir() : path(fs::temp_directory_path() / ("lra-pretrain-" + std::to_string(::getpid()) + "-" +
                                                 std::to_string(counter()++))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

spdlog::logger& quiet() {
  static spdlog::logger log("pretrain-test", std::make_shared<spdlog::sinks::null_sink_mt>());
  return log;
}

// Runs the phase on a fresh classifier; returns the outcome and the SHA-256 of encoder.pt.
std::pair<PretrainingOutcome, std::string> pretrain(const lra::Dataset& data, const fs::path& dir,
                                                    PretrainObjective objective = PretrainObjective::masked_tokens,
                                                    bool resume = false, double stop_after = 0) {
  const Manifest m = parse_manifest(kManifest, "test");
  Classifier model = classifier(m);
  PretrainingOptions o;
  o.manifest = m;
  o.objective = objective;
  o.run_dir = dir;
  o.identity = {{"test", 1}};
  o.resume = resume;
  o.stop_after_seconds = stop_after;
  auto out = run_pretraining(model, data, o, quiet());
  const fs::path weights = dir / kPretrainingDir / kPretrainedWeights;
  return {out, fs::exists(weights) ? sha256_file(weights) : std::string()};
}

}  // namespace

TEST(PretrainObjectives, MaskedTokenLossReadsOnlyTheMaskedPositions) {
  torch::manual_seed(0);
  const auto ids = torch::randint(0, 7, {2, 5}, torch::kLong);
  auto masked = torch::zeros({2, 5}, torch::kBool);
  masked[0][1] = true;
  masked[0][3] = true;
  masked[1][4] = true;
  auto logits = torch::randn({2, 5, 7});
  const auto base = masked_token_loss(logits, ids, masked, 2).loss.item<double>();
  // By hand: each input's mean over its masked positions, then the batch mean.
  const auto ce = [&](int b, int t) {
    return -torch::log_softmax(logits[b][t], 0)[ids[b][t].item<int64_t>()].item<double>();
  };
  EXPECT_NEAR(base, ((ce(0, 1) + ce(0, 3)) / 2 + ce(1, 4)) / 2, 1e-5);
  // Any logit at an unmasked position changes nothing; a masked one does.
  auto other = logits.clone();
  other[0][0][ids[0][0].item<int64_t>()] += 5;
  other[1][2][0] -= 3;
  EXPECT_DOUBLE_EQ(masked_token_loss(other, ids, masked, 2).loss.item<double>(), base);
  other[0][3][ids[0][3].item<int64_t>()] += 5;
  EXPECT_NE(masked_token_loss(other, ids, masked, 2).loss.item<double>(), base);
}

TEST(PretrainObjectives, NextTokenLossPredictsTheFollowingRealToken) {
  torch::manual_seed(1);
  const auto ids = torch::randint(0, 6, {1, 4}, torch::kLong);
  auto mask = torch::ones({1, 4}, torch::kBool);
  mask[0][3] = false;  // one position of padding
  const auto logits = torch::randn({1, 4, 6});
  const auto ce = [&](int t) { return -torch::log_softmax(logits[0][t], 0)[ids[0][t + 1].item<int64_t>()].item<double>(); };
  // Positions 0 and 1 predict tokens 1 and 2; position 2 would predict padding.
  EXPECT_NEAR(next_token_loss(logits, ids, mask, 1).loss.item<double>(), (ce(0) + ce(1)) / 2, 1e-5);
  auto other = logits.clone();
  other[0][2][0] += 4;  // the last real position predicts nothing
  other[0][3][1] -= 4;
  EXPECT_NEAR(next_token_loss(other, ids, mask, 1).loss.item<double>(), (ce(0) + ce(1)) / 2, 1e-5);
}

TEST(PretrainObjectives, MaskDrawsDependOnSeedAndUpdateAloneAndOnlyOnRealTokens) {
  auto mask = torch::ones({64, 100}, torch::kBool);
  mask.narrow(1, 60, 40).fill_(false);
  const auto a = draw_masked_positions(mask, 0.25, 7, 3);
  EXPECT_TRUE(torch::equal(a, draw_masked_positions(mask, 0.25, 7, 3)));
  EXPECT_FALSE(torch::equal(a, draw_masked_positions(mask, 0.25, 7, 4)));
  EXPECT_FALSE(torch::equal(a, draw_masked_positions(mask, 0.25, 8, 3)));
  EXPECT_EQ(a.narrow(1, 60, 40).sum().item<int64_t>(), 0) << "padding is never masked";
  const double share = a.sum().item<double>() / (64 * 60);
  EXPECT_NEAR(share, 0.25, 0.03);
}

TEST(PretrainObjectives, TheObjectiveFollowsTheProbedSummaryPosition) {
  EXPECT_EQ(objective_name(objective_for(SummaryPosition::after_last)), "next_token");
  EXPECT_EQ(objective_name(objective_for(SummaryPosition::first)), "masked_tokens");
  EXPECT_EQ(objective_name(objective_for(SummaryPosition::mean)), "masked_tokens");
  EXPECT_EQ(objective_name_for_summary("after_last"), "next_token");
  EXPECT_EQ(objective_name_for_summary("first"), "masked_tokens");
}

// Labels never enter the phase, nor do the validation and test inputs: the
// pretrained weights are the same bytes when they all change.
TEST(PretrainingPhase, LabelsAndHeldOutSplitsNeverChangeThePretrainedWeights) {
  const lra::Dataset clean = dataset();
  lra::Dataset poisoned = clean;
  for (auto& l : poisoned.train.labels) l = 1 - l;
  poisoned.val = random_split(16, 20);
  poisoned.test = random_split(16, 30);
  TempDir a, b;
  const auto [first, first_sha] = pretrain(clean, a.path);
  const auto [second, second_sha] = pretrain(poisoned, b.path);
  ASSERT_FALSE(first_sha.empty());
  EXPECT_EQ(first_sha, second_sha);
  EXPECT_EQ(first.record["history"], second.record["history"]);
  EXPECT_EQ(first.record["data"]["inputs_fingerprint"], split_inputs_fingerprint(clean.train));
  EXPECT_EQ(first.record["data"]["inputs_fingerprint"], second.record["data"]["inputs_fingerprint"]);
  EXPECT_NE(first.record["data"]["held_out_inputs"], second.record["data"]["held_out_inputs"]);
  EXPECT_EQ(first.record["objective"], "masked_tokens");
  EXPECT_EQ(first.record["mask_ratio"], 0.3);
  EXPECT_EQ(first.record["steps"], 12);
  EXPECT_EQ(first.record["weights_sha256"], first_sha);
  // Changing the training inputs does change them.
  lra::Dataset other = clean;
  other.train.tokens[0] = other.train.tokens[0] % 9 + 1;
  TempDir c;
  EXPECT_NE(pretrain(other, c.path).second, first_sha);
}

TEST(PretrainingPhase, StoppedAndResumedEqualsUninterrupted) {
  const lra::Dataset data = dataset();
  TempDir whole, sliced;
  const auto [full, full_sha] = pretrain(data, whole.path);
  const auto [stopped, none] = pretrain(data, sliced.path, PretrainObjective::masked_tokens, false, 1e-9);
  ASSERT_TRUE(stopped.stopped);
  EXPECT_EQ(stopped.steps, 4);  // the first report step
  EXPECT_TRUE(none.empty());
  const auto [resumed, resumed_sha] = pretrain(data, sliced.path, PretrainObjective::masked_tokens, true);
  ASSERT_FALSE(resumed.stopped);
  EXPECT_EQ(resumed_sha, full_sha);
  EXPECT_EQ(resumed.record["history"], full.record["history"]);
  EXPECT_EQ(resumed.record["timing"]["resumed_from"], "step-4");
  // Resuming a finished phase loads its weights and trains nothing.
  const auto [again, again_sha] = pretrain(data, sliced.path, PretrainObjective::masked_tokens, true);
  EXPECT_EQ(again_sha, full_sha);
  EXPECT_EQ(again.record["weights_sha256"], full_sha);
  // A changed weights file is refused, naming both hashes.
  {
    std::ofstream(sliced.path / kPretrainingDir / kPretrainedWeights, std::ios::app) << "x";
  }
  try {
    pretrain(data, sliced.path, PretrainObjective::masked_tokens, true);
    FAIL() << "a changed encoder.pt was accepted";
  } catch (const lra::Error& e) {
    EXPECT_NE(std::string(e.what()).find(full_sha), std::string::npos) << e.what();
  }
}

TEST(PretrainingPhase, NextTokenObjectiveRecordsNoMaskRatio) {
  TempDir d;
  const auto [out, sha] = pretrain(dataset(), d.path, PretrainObjective::next_token);
  EXPECT_EQ(out.record["objective"], "next_token");
  EXPECT_FALSE(out.record.contains("mask_ratio"));
  EXPECT_TRUE(std::isfinite(out.record["metrics"]["final_train_loss"].get<double>()));
}

TEST(PretrainManifest, SectionReadValidatedOverriddenAndRecorded) {
  Manifest m = parse_manifest(kManifest, "test");
  ASSERT_TRUE(m.pretrain.present);
  EXPECT_EQ(pretraining_train_config(m).seed, 3);  // the trial seed is train.seed
  const auto j = to_json(m);
  ASSERT_TRUE(j.contains("pretrain"));
  EXPECT_EQ(j["pretrain"]["mask_ratio"], 0.3);
  EXPECT_EQ(j["pretrain"]["betas"], nlohmann::json::array({0.9, 0.999}));
  EXPECT_EQ(to_json(config_manifest(j, "listops", "result.json")), j);  // read back through the same tables
  apply_override(m, "pretrain.steps=40");
  EXPECT_EQ(m.pretrain.train.steps, 40);
  const auto fails = [](const std::string& text, const std::string& words) {
    try {
      parse_manifest(text, "bad.toml");
      ADD_FAILURE() << "accepted: " << words;
    } catch (const lra::Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  const std::string text = kManifest;
  fails(std::string(text).replace(text.find("mask_ratio = 0.3"), 16, "mask_ratio = 1.5"), "pretrain.mask_ratio = 1.5");
  fails(std::string(text).replace(text.find("mask_ratio = 0.3"), 16, "seed = 4"), "unknown key 'pretrain.seed'");
  fails(std::string(text).replace(text.find("warmup = 2\nsteps_per_cycle = 100\nweight_decay = 0.0"), 10, "warmup = 0"),
        "pretrain.warmup");
  // A from-scratch manifest has no [pretrain]: neither in its record nor by --set.
  Manifest scratch = parse_manifest(text.substr(0, text.find("[pretrain]")), "scratch.toml");
  EXPECT_FALSE(scratch.pretrain.present);
  EXPECT_FALSE(to_json(scratch).contains("pretrain"));
  try {
    apply_override(scratch, "pretrain.steps=5");
    ADD_FAILURE() << "--set pretrain.* accepted on a manifest without [pretrain]";
  } catch (const lra::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--protocol spt"), std::string::npos) << e.what();
  }
}
