// A sequence task read from the last state (lra::SequenceReadout::from_last_state,
// SDK 1.5): MAD's AutoEncoder decoder (model/last_state_decoder.h) on the
// host's causal encoder. Its logits at position p depend on the example's last
// state and p alone, so a target equal to token p cannot be copied.
#include <gtest/gtest.h>

#include <cmath>

#include "model/backbone.h"
#include "model/last_state_decoder.h"

using namespace lra::host;

namespace {

ModelConfig small(int64_t ffn_dim = 32, const std::string& positions = "sinusoidal") {
  ModelConfig m{};
  m.layers = 2;
  m.d_model = 16;
  m.heads = 2;
  m.qkv_dim = 16;
  m.ffn_dim = ffn_dim;
  m.pooling = "none";
  m.positions = positions;
  m.max_len = 12;
  return m;
}

BackboneSpec last_state_spec(const ModelConfig& m, int64_t classes = 5) {
  BackboneSpec spec{m, 20, classes, 0, false};
  spec.per_position = true;
  spec.summary = SummaryPosition::every_position;
  spec.readout = lra::SequenceReadout::from_last_state;
  return spec;
}

// A mixer that adds nothing: with ffn_dim 0 and no positions, the state at t is token t's alone.
class ZeroMixer final : public lra::Mixer {
 public:
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor&) override { return torch::zeros_like(x); }
};

torch::Tensor lengths_mask(int64_t L, std::initializer_list<int64_t> lengths) {
  auto mask = torch::zeros({static_cast<int64_t>(lengths.size()), L}, torch::kBool);
  int64_t i = 0;
  for (const auto n : lengths) mask[i++].narrow(0, 0, n).fill_(true);
  return mask;
}

bool close(const torch::Tensor& a, const torch::Tensor& b) { return torch::allclose(a, b, 1e-5, 1e-6); }

}  // namespace

// posemb_sincos_1d (mad/model/layers/featurization/posemb.py): sines, then cosines, of p * w_k.
TEST(LastStateDecoder, ThePositionCodeIsMadsSincos) {
  const auto pe = sincos_positions(40, 8);  // half 4: w_k = exp(-k ln(10000) / 3)
  ASSERT_EQ(pe.sizes(), (std::vector<int64_t>{40, 8}));
  for (int p : {0, 3, 39})
    for (int k = 0; k < 4; ++k) {
      const double w = std::exp(-k * std::log(10000.0) / 3.0);
      EXPECT_NEAR(pe[p][k].item<float>(), std::sin(p * w), 1e-6) << p << " " << k;
      EXPECT_NEAR(pe[p][4 + k].item<float>(), std::cos(p * w), 1e-6) << p << " " << k;
    }
  const auto odd = sincos_positions(5, 9);  // an odd width ends with a zero column
  EXPECT_TRUE(torch::equal(odd.select(1, 8), torch::zeros({5})));
  EXPECT_TRUE(torch::isfinite(sincos_positions(5, 2)).all().item<bool>()) << "MAD divides by 0 at d = 2";
}

// The data's readout reaches the backbone only for sequence tasks.
TEST(LastStateDecoder, TheTasksReadoutChoosesTheHead) {
  lra::Dataset d;
  d.info.vocab_size = 20;
  d.sequence.num_classes = 5;
  d.sequence.readout = lra::SequenceReadout::from_last_state;
  EXPECT_TRUE(backbone_spec(small(), d, 0).from_last_state());
  d.sequence.readout = lra::SequenceReadout::every_position;
  EXPECT_FALSE(backbone_spec(small(), d, 0).from_last_state());
  BackboneSpec classifier{small(), 20, 5, 0, false};
  classifier.readout = lra::SequenceReadout::from_last_state;
  EXPECT_FALSE(classifier.from_last_state()) << "a pooled classifier has no per-position readout";
}

// Logits at every position of every example, or at the scored ones; the decoder
// replaces the linear head: 3 RMSNorms, two d x d layers, the output layer, MAD's init.
TEST(LastStateDecoder, ShapesParametersAndInitialisation) {
  const ModelConfig m = small();
  torch::manual_seed(0);
  Classifier model(last_state_spec(m), make_reference_attention);
  BackboneSpec linear = last_state_spec(m);
  linear.readout = lra::SequenceReadout::every_position;
  const int64_t d = m.d_model, extra = 3 * d + 2 * (d * d + d);  // the decoder beyond a linear head's d x 5 + 5
  EXPECT_EQ(count_parameters(*model), count_parameters(*Classifier(linear, make_reference_attention)) + extra);
  const auto params = model->named_parameters();
  EXPECT_EQ(params.find("head1.weight"), nullptr);
  ASSERT_NE(params.find("decoder.out.weight"), nullptr);
  EXPECT_EQ(params["decoder.out.weight"].sizes(), (std::vector<int64_t>{5, d}));
  EXPECT_TRUE(torch::equal(params["decoder.fc1.bias"], torch::zeros({d})));
  EXPECT_NEAR(params["decoder.fc2.weight"].std().item<double>(), 0.02, 0.005);
  EXPECT_TRUE(torch::equal(params["decoder.norm3.weight"], torch::ones({d})));
  model->eval();
  torch::NoGradGuard g;
  const auto ids = torch::randint(0, 20, {3, 12}, torch::kLong);
  const auto mask = lengths_mask(12, {12, 7, 1});
  const auto all = model->forward(ids, mask);
  ASSERT_EQ(all.sizes(), (std::vector<int64_t>{3, 12, 5}));
  auto targets = torch::full({3, 12}, -100, torch::kLong);
  targets.narrow(1, 0, 7)[1].fill_(2);
  targets[0][11] = 4;
  targets[2][0] = 1;
  const auto scored = model->scored_logits(ids, mask, targets);
  ASSERT_EQ(scored.sizes(), (std::vector<int64_t>{9, 5}));  // row-major: example 0's, 1's, then 2's
  EXPECT_TRUE(close(scored[0], all[0][11]));
  for (int p = 0; p < 7; ++p) EXPECT_TRUE(close(scored[1 + p], all[1][p])) << p;
  EXPECT_TRUE(close(scored[8], all[2][0]));
}

// Examples of different lengths in one batch: each is decoded from the state at its own last
// real position, as if it were alone; tokens past its end change nothing.
TEST(LastStateDecoder, EachExampleIsDecodedFromItsOwnLastState) {
  torch::manual_seed(1);
  Classifier model(last_state_spec(small()), make_reference_attention);
  model->eval();
  torch::NoGradGuard g;
  auto ids = torch::randint(0, 20, {2, 12}, torch::kLong);
  const auto mask = lengths_mask(12, {12, 7});
  const auto all = model->forward(ids, mask);
  const auto alone = model->forward(ids[1].narrow(0, 0, 7).unsqueeze(0), torch::ones({1, 7}, torch::kBool));
  EXPECT_TRUE(close(all[1].narrow(0, 0, 7), alone[0]));
  auto padded = ids.clone();
  padded[1].narrow(0, 7, 5).fill_(19);
  EXPECT_TRUE(close(model->forward(padded, mask), all));
  // An earlier token reaches every position, through the last state: positions
  // before and after it move alike.
  auto earlier = ids.clone();
  earlier[0][2] = (earlier[0][2].item<int64_t>() + 1) % 20;
  const auto moved = model->forward(earlier, mask);
  EXPECT_FALSE(close(moved[0][0], all[0][0]));
  EXPECT_FALSE(close(moved[0][11], all[0][11]));
  EXPECT_TRUE(close(moved[1], all[1])) << "the other example is untouched";
}

// No causal copy: with an encoder whose state at t is token t's alone, two examples that end
// alike have identical logits everywhere, though every other token differs.
TEST(LastStateDecoder, IdenticalLastStatesGiveIdenticalLogits) {
  torch::manual_seed(2);
  Classifier model(last_state_spec(small(0, "none")),
                   [](const lra::MixerSpec&) -> std::shared_ptr<lra::Mixer> { return std::make_shared<ZeroMixer>(); });
  model->eval();
  torch::NoGradGuard g;
  auto a = torch::arange(12, torch::kLong).unsqueeze(0);  // 0 1 2 ... 10 11
  auto b = (a + 12).remainder(20);                         // 12 13 ... 19 0 1 2 3
  b[0][11] = 11;                                           // the same last token
  const auto mask = torch::ones({2, 12}, torch::kBool);
  const auto out = model->forward(torch::cat({a, b}), mask);
  EXPECT_TRUE(close(out[0], out[1]));
  auto c = b.clone();
  c[0][11] = 5;  // another last token: another state
  EXPECT_FALSE(close(model->forward(c, mask.narrow(0, 0, 1))[0], out[0]));
}

// A zeroed encoder output (the final LayerNorm's scale and shift at 0) leaves the decoder
// nothing of the input: the same logits for every input, a function of the position only.
TEST(LastStateDecoder, AZeroedEncoderGivesTheSameLogitsForEveryInput) {
  torch::manual_seed(3);
  Classifier model(last_state_spec(small()), make_reference_attention);
  {
    torch::NoGradGuard g;
    for (auto& p : model->named_parameters())
      if (p.key().rfind("final_ln.", 0) == 0) p.value().zero_();
  }
  model->eval();
  torch::NoGradGuard g;
  const auto mask = torch::ones({4, 12}, torch::kBool);
  const auto out = model->forward(torch::randint(0, 20, {4, 12}, torch::kLong), mask);
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(close(out[i], out[0])) << i;
  EXPECT_FALSE(close(out[0][0], out[0][5])) << "the position code still tells positions apart";
}
