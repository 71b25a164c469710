// linformer: low-rank projection of keys and values along the length axis.
#include "mixer_harness.h"

using namespace lra::test;

namespace {

// The named parameter or buffer of a mixer (the projections are "E" and "F").
torch::Tensor tensor_named(lra::Mixer& m, const std::string& name) {
  for (const auto& p : m.named_parameters())
    if (p.key() == name) return p.value();
  for (const auto& b : m.named_buffers())
    if (b.key() == name) return b.value();
  throw std::runtime_error("no parameter or buffer '" + name + "'");
}

void set_identity(lra::Mixer& m, const std::string& name) {
  torch::NoGradGuard g;
  auto t = tensor_named(m, name);
  t.copy_(torch::eye(t.size(0), t.size(1)));
}

int64_t parameter_count(lra::Mixer& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

}  // namespace

TEST(Linformer, ShapesFiniteAndGradients) {
  auto m = make_mixer("linformer", small_spec(), {{"projection", std::string("learned")}});
  EXPECT_TRUE(shapes_finite_and_grads(*m, 2, 40, 32));
  auto m2 = make_mixer("linformer", small_spec(), {{"share_kv", false}, {"projection", std::string("fixed")}});
  EXPECT_TRUE(shapes_finite_and_grads(*m2, 2, 64, 32));
}

TEST(Linformer, LearnedProjectionReceivesGradient) {
  auto m = make_mixer("linformer", small_spec(), {{"projection", std::string("learned")}, {"share_kv", false}});
  auto x = random_input(2, 40, 32);
  m->forward(x, lengths_mask(40, {40, 25})).pow(2).sum().backward();
  for (const char* name : {"E", "F"}) {
    auto g = tensor_named(*m, name).grad();
    ASSERT_TRUE(g.defined()) << name;
    EXPECT_GT(g.narrow(1, 0, 40).abs().sum().item<double>(), 0.0) << name;
    // Columns past the input length take no part.
    EXPECT_EQ(g.narrow(1, 40, 24).abs().sum().item<double>(), 0.0) << name;
  }
}

// k = L and E = identity: the projected keys/values are the keys/values themselves.
TEST(Linformer, IdentityProjectionEqualsSoftmaxAttention) {
  for (bool share : {true, false}) {
    auto m = make_mixer("linformer", small_spec(32, 4, 48), {{"projection", std::string("learned")}, {"k", int64_t{48}}, {"share_kv", share}});
    set_identity(*m, "E");
    if (!share) set_identity(*m, "F");
    auto x = random_input(3, 48, 32);
    auto mask = lengths_mask(48, {48, 48, 48});
    torch::NoGradGuard g;
    EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, false)), 1e-5)
        << "share_kv " << share;
  }
}

TEST(Linformer, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("linformer", small_spec()), 48, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer("linformer", small_spec(), {{"share_kv", false}}), 48, 32));
}

// The exact sense of LRA_CAP_PADDING_MASK here: a padded row gives at its real
// positions the output of the same tokens fed alone, without padding.
TEST(Linformer, PaddedRowEqualsTheRowAlone) {
  ASSERT_TRUE(mixer_capabilities("linformer") & LRA_CAP_PADDING_MASK);
  auto m = make_mixer("linformer", small_spec(), {{"projection", std::string("learned")}});
  const int64_t L = 60;
  const std::vector<int64_t> lengths = {60, 33, 9};
  auto x = random_input(3, L, 32);
  torch::NoGradGuard g;
  auto padded = m->forward(x, lengths_mask(L, lengths));
  for (size_t b = 0; b < lengths.size(); ++b) {
    const int64_t n = lengths[b];
    auto alone = m->forward(x[b].narrow(0, 0, n).unsqueeze(0), lengths_mask(n, {n}));
    EXPECT_LT(max_abs_diff(padded[b].narrow(0, 0, n), alone[0]), 1e-5) << "row " << b;
  }
}

TEST(Linformer, ParameterCountPerOption) {
  const auto spec = small_spec(32, 4, 64);
  const int64_t qkvo = 4 * 32 * 32;
  EXPECT_EQ(parameter_count(*make_mixer("linformer", spec, {{"projection", std::string("learned")}})), qkvo + 16 * 64);
  EXPECT_EQ(parameter_count(*make_mixer("linformer", spec, {{"projection", std::string("learned")}, {"share_kv", false}})), qkvo + 2 * 16 * 64);
  auto fixed = make_mixer("linformer", spec, {{"share_kv", false}, {"projection", std::string("fixed")}});
  EXPECT_EQ(parameter_count(*fixed), qkvo);
  EXPECT_EQ(tensor_named(*fixed, "F").sizes(), torch::IntArrayRef({16, 64}));
}

TEST(Linformer, AttentionDropoutOnlyInTraining) {
  auto spec = small_spec();
  spec.attention_dropout = 0.5;
  auto m = make_mixer("linformer", spec, {{"projection", std::string("learned")}});
  auto x = random_input(2, 40, 32);
  auto mask = lengths_mask(40, {40, 40});
  torch::NoGradGuard g;
  EXPECT_EQ(max_abs_diff(m->forward(x, mask), m->forward(x, mask)), 0.0);
  m->train();
  EXPECT_GT(max_abs_diff(m->forward(x, mask), m->forward(x, mask)), 1e-4);
}

TEST(Linformer, RejectsBadOptionsAndLongInputs) {
  EXPECT_THROW(make_mixer("linformer", small_spec(), {{"k", int64_t{0}}}), lra::Error);
  EXPECT_THROW(make_mixer("linformer", small_spec(), {{"projection", std::string("random")}}), lra::Error);
  auto m = make_mixer("linformer", small_spec(32, 4, 64));
  torch::NoGradGuard g;
  EXPECT_ANY_THROW(m->forward(random_input(1, 65, 32), lengths_mask(65, {65})));
}

TEST(Linformer, RefusesCausal) {
  EXPECT_FALSE(mixer_capabilities("linformer") & LRA_CAP_CAUSAL);
  EXPECT_THROW(make_mixer("linformer", small_spec(32, 4, 64, true)), lra::Error);
}

TEST(Linformer, AutoProjectionKeepsEveryTaskWithinBudget) {
  // ListOps layer (d 512, qkv 512, 2001 positions): E (32k) is < 10% of Q/K/V/O (1M): learned, as LRA.
  lra::MixerSpec listops = small_spec(512, 8, 2001);
  EXPECT_EQ(parameter_count(*make_mixer("linformer", listops)), 4 * 512 * 512 + 16 * 2001);
  // Pathfinder layer (d 32, qkv 16, 1024 positions): a learned E (16k) would dwarf Q/K/V/O (2k): fixed.
  lra::MixerSpec pathfinder = small_spec(32, 4, 1024);
  pathfinder.qkv_dim = 16;
  EXPECT_EQ(parameter_count(*make_mixer("linformer", pathfinder)), 4 * 32 * 16);
}

namespace lra::test {
namespace {

// mask_keys = false is LRA's behaviour (the Table 1 configuration): the mask
// changes nothing, so padding is read as keys; the default honours the mask.
TEST(LinformerMaskKeys, FalseIgnoresTheMaskAsLraDid) { EXPECT_TRUE(mask_keys_false_ignores_the_mask("linformer")); }

}  // namespace
}  // namespace lra::test
