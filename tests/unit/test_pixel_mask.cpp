// LRA's zero-pixel masking (quirk Q1), which lra-v1 reproduces from release
// lra-v1.2 on: token id 0 is padding on every task, an inserted CLS copies the
// first position's mask, masked queries average every value uniformly, and
// MEAN pooling still counts the masked pixels. Checked on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "lra/attention.h"
#include "manifest/manifest.h"
#include "manifest/presets.h"
#include "model/backbone.h"

using namespace lra::host;

namespace {

// A mixer that keeps the mask it was given and mixes nothing (returns zeros).
class RecordingMixer final : public lra::Mixer {
 public:
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    seen = mask.clone();
    return torch::zeros_like(x);
  }
  torch::Tensor seen;
};

ModelConfig pixel_model(const std::string& pooling, const std::string& padding_mask) {
  ModelConfig m{};
  m.layers = 1;
  m.d_model = 8;
  m.heads = 2;
  m.qkv_dim = 8;
  m.ffn_dim = 16;
  m.dropout = 0.0;
  m.attention_dropout = 0.0;
  m.pooling = pooling;
  m.positions = "sinusoidal";
  m.max_len = 4;
  m.padding_mask = padding_mask;
  return m;
}

torch::Tensor bools(std::vector<std::vector<int>> rows) {
  auto t = torch::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}, torch::kBool);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j) t[i][j] = rows[i][j] != 0;
  return t;
}

// [1, 1, L, 1] from values.
torch::Tensor column(std::vector<float> v) {
  return torch::tensor(v).view({1, 1, static_cast<int64_t>(v.size()), 1});
}

}  // namespace

// Three positions, the middle one masked; head width 1, so logits are q_i * k_j.
//   q = [1, 2, 0], k = [1, 5, 0], v = [1, 10, 100]
//   row 0: keys 0 and 2, logits [1, 0]  -> (e * 1 + 100) / (e + 1)
//   row 1: masked query: uniform over all three keys -> (1 + 10 + 100) / 3 = 37
//   row 2: logits [0, 0]                -> (1 + 100) / 2 = 50.5
TEST(PixelMask, MaskedQueryRowsAverageEveryValueUniformly) {
  const auto q = column({1, 2, 0}), k = column({1, 5, 0}), v = column({1, 10, 100});
  const auto mask = bools({{1, 0, 1}});
  const double e = std::exp(1.0);
  const std::vector<double> want = {(e * 1 + 100) / (e + 1), 37.0, 50.5};
  for (bool explicit_path : {true, false}) {  // probs_out forces the explicit path; without it LibTorch 2 fuses
    torch::Tensor probs;
    const auto out = lra::ops::softmax_attention(q, k, v, mask, false, 0.0, false, explicit_path ? &probs : nullptr, {},
                                                 mask);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(out[0][0][i][0].item<double>(), want[i], 1e-4) << "row " << i;
    if (explicit_path) {
      EXPECT_NEAR(probs[0][0][1][0].item<double>(), 1.0 / 3, 1e-6);  // the masked row is uniform
      EXPECT_NEAR(probs[0][0][1][1].item<double>(), 1.0 / 3, 1e-6);
      EXPECT_NEAR(probs[0][0][0][1].item<double>(), 0.0, 1e-6);  // a masked key gets no weight
    }
  }
  // Without a query mask the masked position attends to the real keys (q = 2: logits [2, 0]).
  const auto keys_only = lra::ops::softmax_attention(q, k, v, mask, false, 0.0, false);
  EXPECT_NEAR(keys_only[0][0][1][0].item<double>(), (e * e * 1 + 100) / (e * e + 1), 1e-4);
}

TEST(PixelMask, NonzeroTokensMasksIdZeroInsideTheExample) {
  torch::manual_seed(0);
  const auto ids = torch::tensor({0, 3, 0, 5}, torch::kLong).view({1, 4});
  const auto length = bools({{1, 1, 1, 0}});  // the last position is length padding
  Classifier lra(BackboneSpec{pixel_model("mean", "nonzero_tokens"), 256, 2, 0}, make_reference_attention);
  Classifier plain(BackboneSpec{pixel_model("mean", "length"), 256, 2, 0}, make_reference_attention);
  EXPECT_TRUE(torch::equal(lra->key_mask(ids, length), bools({{0, 1, 0, 0}})));
  EXPECT_TRUE(torch::equal(plain->key_mask(ids, length), length));
}

// LRA inserts CLS with a copy of the first position's mask: an image whose
// first pixel is black has a masked CLS; with length masks CLS is always real.
TEST(PixelMask, ClsCopiesTheFirstPositionsMask) {
  const auto ids = torch::tensor({0, 4, 4, 9, 7, 0, 4, 1}, torch::kLong).view({2, 4});
  const auto full = torch::ones({2, 4}, torch::kBool);
  for (const char* mode : {"nonzero_tokens", "length"}) {
    std::vector<std::shared_ptr<RecordingMixer>> mixers;
    auto factory = [&](const lra::MixerSpec&) {
      mixers.push_back(std::make_shared<RecordingMixer>());
      return std::static_pointer_cast<lra::Mixer>(mixers.back());
    };
    Classifier model(BackboneSpec{pixel_model("cls", mode), 256, 2, 0}, factory);
    model->eval();
    model->forward(ids, full);
    ASSERT_EQ(mixers.size(), 1u);
    const auto want = std::string(mode) == "length" ? torch::ones({2, 5}, torch::kBool)
                                                    : bools({{0, 0, 1, 1, 1}, {1, 1, 0, 1, 1}});
    EXPECT_TRUE(torch::equal(mixers[0]->seen, want)) << mode << ": " << mixers[0]->seen;
  }
}

// MEAN pooling averages every position of the example, masked pixels included
// (LRA's pooling ignores the mask). With a mixer that mixes nothing, the mask
// can only reach the output through pooling, so both modes must agree.
TEST(PixelMask, MeanPoolingCountsMaskedPixels) {
  const auto ids = torch::tensor({0, 4, 0, 9, 7, 0, 0, 1}, torch::kLong).view({2, 4});
  const auto full = torch::ones({2, 4}, torch::kBool);
  auto factory = [](const lra::MixerSpec&) { return std::static_pointer_cast<lra::Mixer>(std::make_shared<RecordingMixer>()); };
  torch::manual_seed(3);
  Classifier lra(BackboneSpec{pixel_model("mean", "nonzero_tokens"), 256, 2, 0}, factory);
  torch::manual_seed(3);
  Classifier plain(BackboneSpec{pixel_model("mean", "length"), 256, 2, 0}, factory);
  lra->eval();
  plain->eval();
  EXPECT_TRUE(torch::allclose(lra->encode(ids, full), plain->encode(ids, full), 1e-6, 1e-6));
  // Pooling only the unmasked pixels would give a different vector.
  const auto unmasked = lra->key_mask(ids, full);
  EXPECT_FALSE(torch::allclose(lra->encode(ids, full), plain->encode(ids, unmasked), 1e-4, 1e-4));
}

// With the reference attention, black pixels no longer act as keys: the
// output changes with the mode, and real pixels' content still matters.
TEST(PixelMask, ReferenceAttentionIgnoresBlackPixelsAsKeys) {
  const auto ids = torch::tensor({0, 4, 0, 9}, torch::kLong).view({1, 4});
  const auto full = torch::ones({1, 4}, torch::kBool);
  torch::manual_seed(5);
  Classifier lra(BackboneSpec{pixel_model("mean", "nonzero_tokens"), 256, 2, 0}, make_reference_attention);
  torch::manual_seed(5);
  Classifier plain(BackboneSpec{pixel_model("mean", "length"), 256, 2, 0}, make_reference_attention);
  lra->eval();
  plain->eval();
  EXPECT_FALSE(torch::allclose(lra->forward(ids, full), plain->forward(ids, full), 1e-5, 1e-5));
  // An image without black pixels is the same under both modes.
  const auto bright = torch::tensor({3, 4, 8, 9}, torch::kLong).view({1, 4});
  EXPECT_TRUE(torch::allclose(lra->forward(bright, full), plain->forward(bright, full), 1e-6, 1e-6));
}

// The official and smoke manifests of the image tasks reproduce the mask; the
// text tasks leave the key out (their ids are never 0, so it is the length mask).
TEST(PixelMask, ManifestsStateTheMask) {
  for (const char* preset : {"official", "smoke"}) {
    for (const char* task : {"image", "pathfinder", "pathx"})
      EXPECT_EQ(load_preset(task, preset).model.padding_mask, "nonzero_tokens") << preset << " " << task;
    for (const char* task : {"listops", "text", "retrieval"})
      EXPECT_EQ(load_preset(task, preset).model.padding_mask, "length") << preset << " " << task;
  }
  EXPECT_EQ(load_preset("pathfinder", "official").model.positions, "sinusoidal");
  Manifest m = load_preset("pathfinder", "official");
  apply_override(m, "model.padding_mask=length");
  EXPECT_EQ(m.model.padding_mask, "length");
  EXPECT_EQ(m.overrides, std::vector<std::string>{"model.padding_mask=length"});
  EXPECT_THROW(apply_override(m, "model.padding_mask=pixels"), lra::Error);
}
