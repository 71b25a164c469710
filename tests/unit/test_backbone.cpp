// The LRA backbone: parameter counts against the reference's derived figures,
// sinusoidal layout, masking and determinism.
#include <gtest/gtest.h>

#include <cmath>

#include "manifest/presets.h"
#include "model/backbone.h"

using namespace lra::host;

namespace {

ModelConfig config(int64_t layers, int64_t d, int64_t heads, int64_t qkv, int64_t ffn, int64_t max_len,
                   const std::string& pooling = "cls", const std::string& positions = "sinusoidal") {
  ModelConfig m{};
  m.layers = layers;
  m.d_model = d;
  m.heads = heads;
  m.qkv_dim = qkv;
  m.ffn_dim = ffn;
  m.dropout = 0.1;
  m.attention_dropout = 0.1;
  m.pooling = pooling;
  m.positions = positions;
  m.max_len = max_len;
  return m;
}

int64_t reference_count(const ModelConfig& m, int64_t vocab, int64_t classes, bool paired = false) {
  return count_parameters(*Classifier(BackboneSpec{m, vocab, classes, 0, paired}, make_reference_attention));
}

torch::Tensor length_mask(const torch::Tensor& ids, int64_t real) {
  auto m = torch::zeros(ids.sizes(), torch::kBool);
  m.narrow(1, 0, real).fill_(true);
  return m;
}

}  // namespace

// Reference figures derived from the LRA architecture and task configs (docs/rules.md, "Tiers").
TEST(Backbone, ListOpsReferenceTransformerHas8948746Parameters) {
  EXPECT_EQ(reference_count(config(4, 512, 8, 512, 1024, 2000), 17, 10), 8948746);
}

TEST(Backbone, TextReferenceTransformerHas3486722Parameters) {
  EXPECT_EQ(reference_count(config(4, 256, 4, 256, 1024, 1000), 257, 2), 3486722);
}

TEST(Backbone, SinusoidsAreInterleaved) {
  auto pe = sinusoidal_positions(10, 8);
  for (int p : {0, 3, 9}) {
    EXPECT_NEAR(pe[p][0].item<float>(), std::sin(p), 1e-6);
    EXPECT_NEAR(pe[p][1].item<float>(), std::cos(p), 1e-6);
    EXPECT_NEAR(pe[p][2].item<float>(), std::sin(p / std::pow(10000.0, 2.0 / 8)), 1e-6);
    EXPECT_NEAR(pe[p][3].item<float>(), std::cos(p / std::pow(10000.0, 2.0 / 8)), 1e-6);
  }
}

TEST(Backbone, PaddingDoesNotChangeTheOutput) {
  for (const char* pooling : {"cls", "mean"}) {
    torch::manual_seed(0);
    Classifier model(BackboneSpec{config(2, 32, 4, 32, 64, 24, pooling), 17, 10, 0}, make_reference_attention);
    model->eval();
    auto ids = torch::randint(1, 17, {3, 10}, torch::kLong);
    auto short_pad = torch::zeros({3, 16}, torch::kLong);
    auto long_pad = torch::zeros({3, 24}, torch::kLong);
    short_pad.narrow(1, 0, 10).copy_(ids);
    long_pad.narrow(1, 0, 10).copy_(ids);
    auto a = model->forward(short_pad, length_mask(short_pad, 10)), b = model->forward(long_pad, length_mask(long_pad, 10));
    EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-5)) << pooling;
  }
}

TEST(Backbone, SameSeedSameInitialisation) {
  auto build = [] {
    torch::manual_seed(42);
    return Classifier(BackboneSpec{config(1, 16, 2, 16, 32, 8), 17, 10, 0}, make_reference_attention);
  };
  auto a = build(), b = build();
  auto pa = a->parameters(), pb = b->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i]));
}

TEST(Backbone, LearnedPositionsAddATable) {
  auto m = config(1, 16, 2, 16, 32, 8);
  auto sinus = reference_count(m, 17, 10);
  m.positions = "learned";
  EXPECT_EQ(reference_count(m, 17, 10), sinus + 9 * 16);  // (max_len + CLS) x d_model
}

// The official manifests build the reference Transformers of the LRA task configs
// (Pathfinder follows the public config's sinusoids since release lra-v1.2).
TEST(Backbone, OfficialManifestsGiveTheReferenceParameterCounts) {
  struct Case {
    const char* task;
    int64_t vocab, classes;
    bool paired;
    int64_t expected;
  };
  for (const Case& c : {Case{"listops", 17, 10, false, 8948746}, Case{"text", 257, 2, false, 3486722},
                        Case{"retrieval", 257, 2, true, 1087618}, Case{"image", 256, 10, false, 248458},
                        Case{"pathfinder", 256, 2, false, 26530}, Case{"pathx", 256, 2, false, 537954}}) {
    const Manifest m = load_preset(c.task, "official");
    EXPECT_EQ(reference_count(m.model, c.vocab, c.classes, c.paired), c.expected) << c.task;
  }
}

TEST(Backbone, PairedModelSharesTheEncoderAndIsSymmetricInShape) {
  torch::manual_seed(0);
  Classifier model(BackboneSpec{config(1, 16, 2, 16, 32, 12, "first"), 257, 2, 0, true}, make_reference_attention);
  model->eval();
  auto a = torch::randint(1, 257, {3, 12}, torch::kLong), b = torch::randint(1, 257, {3, 12}, torch::kLong);
  auto ma = length_mask(a, 7), mb = length_mask(b, 12);
  auto ab = model->forward(a, ma, b, mb), ba = model->forward(b, mb, a, ma);
  EXPECT_EQ(ab.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_FALSE(torch::allclose(ab, ba));  // [u, v] is ordered, as in LRA's dual head
  // Each tower's vector is the shared encoder's output for that input alone.
  auto u = model->encode(a, ma);
  EXPECT_TRUE(torch::allclose(u, model->encode(torch::cat({a, b}), torch::cat({ma, mb})).narrow(0, 0, 3), 1e-5, 1e-5));
  // Tokens past an example's length do not matter, whatever their id.
  auto a_noise = a.clone();
  a_noise.narrow(1, 7, 5).fill_(99);
  EXPECT_TRUE(torch::allclose(ab, model->forward(a_noise, ma, b, mb), 1e-5, 1e-5));
}

TEST(Backbone, TokenZeroIsARealTokenWhenTheMaskSaysSo) {
  // Image tasks: id 0 is a black pixel. With a full mask it must be attended to.
  torch::manual_seed(0);
  Classifier model(BackboneSpec{config(1, 16, 2, 16, 32, 8, "mean"), 256, 2, 0}, make_reference_attention);
  model->eval();
  auto ids = torch::randint(1, 256, {1, 8}, torch::kLong);
  auto with_black = ids.clone();
  with_black.narrow(1, 6, 2).fill_(0);
  auto full = torch::ones({1, 8}, torch::kBool);
  EXPECT_FALSE(torch::allclose(model->forward(ids, full), model->forward(with_black, full)));
  EXPECT_FALSE(torch::allclose(model->forward(with_black, full), model->forward(with_black, length_mask(with_black, 6))));
}

// model.positions = "rotary" (an open choice for the classifier, e.g. the
// self-pretraining paper's rotary Transformer): no position table, and every
// mixer is told to rotate queries and keys.
TEST(Backbone, RotaryPositionsLiveInTheMixers) {
  ModelConfig m = config(2, 16, 2, 16, 32, 10, "cls", "rotary");
  std::vector<lra::MixerSpec> specs;
  Classifier c(BackboneSpec{m, 7, 2, 0, false}, [&](const lra::MixerSpec& s) {
    specs.push_back(s);
    return make_reference_attention(s);
  });
  ASSERT_EQ(specs.size(), 2u);
  for (const auto& s : specs) EXPECT_EQ(s.rotary_base, kClassifierRotaryBase);
  for (const auto& b : c->named_buffers()) EXPECT_EQ(b.key().find("pos"), std::string::npos) << b.key();
  for (const auto& p : c->named_parameters()) EXPECT_NE(p.key(), "pos");
  // The order of the tokens reaches the output only through the mixers' rotation.
  c->eval();
  auto ids = torch::tensor({{1, 2, 3, 4, 5}}, torch::kLong);
  auto mask = torch::ones({1, 5}, torch::kBool);
  auto swapped = torch::tensor({{2, 1, 3, 4, 5}}, torch::kLong);
  EXPECT_FALSE(torch::allclose(c->forward(ids, mask), c->forward(swapped, mask)));
  // Sinusoidal and learned classifiers give the mixers no rotary base.
  specs.clear();
  Classifier s(BackboneSpec{config(1, 16, 2, 16, 32, 10), 7, 2, 0, false}, [&](const lra::MixerSpec& sp) {
    specs.push_back(sp);
    return make_reference_attention(sp);
  });
  EXPECT_EQ(specs.at(0).rotary_base, 0.0);
}

// A sequence task's model (SDK 1.4): causal mixers, a linear head at every position, the host's
// short convolution in the even blocks; logits only where a target is scored.
TEST(Backbone, APerPositionModelIsCausalAndScoresOnlyTargets) {
  ModelConfig m = config(2, 16, 2, 16, 0, 12, "none", "none");
  m.short_conv = 3;
  m.dropout = 0.0;
  m.attention_dropout = 0.0;
  BackboneSpec spec{m, 20, 7, 0, false};
  spec.per_position = true;
  std::vector<lra::MixerSpec> specs;
  torch::manual_seed(0);
  Classifier model(spec, [&](const lra::MixerSpec& s) {
    specs.push_back(s);
    return make_reference_attention(s);
  });
  model->eval();
  ASSERT_EQ(specs.size(), 1u) << "block 0 is the host's convolution; only block 1 asks for the plugin's mixer";
  EXPECT_TRUE(specs[0].causal);
  EXPECT_EQ(specs[0].layer_index, 1);
  EXPECT_EQ(model->mixers().size(), 2u);
  // Mixer parameters count the plugin's mixer only.
  EXPECT_EQ(model->mixer_parameters(), count_parameters(*model->blocks()[1]->mixer));
  const auto ids = torch::randint(0, 20, {2, 12}, torch::kLong);
  const auto mask = torch::ones({2, 12}, torch::kBool);
  torch::NoGradGuard g;
  const auto all = model->forward(ids, mask);
  ASSERT_EQ(all.sizes(), (std::vector<int64_t>{2, 12, 7}));
  // Causal: changing later tokens leaves earlier positions' logits alone.
  auto later = ids.clone();
  later.narrow(1, 6, 6).random_(0, 20);
  EXPECT_TRUE(torch::allclose(model->forward(later, mask).narrow(1, 0, 6), all.narrow(1, 0, 6), 1e-5, 1e-6));
  auto targets = torch::full({2, 12}, -100, torch::kLong);
  targets.index_put_({0, 3}, 4);
  targets.index_put_({1, 11}, 2);
  const auto scored = model->scored_logits(ids, mask, targets);
  ASSERT_EQ(scored.sizes(), (std::vector<int64_t>{2, 7}));
  EXPECT_TRUE(torch::allclose(scored[0], all[0][3], 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(scored[1], all[1][11], 1e-5, 1e-6));
}
