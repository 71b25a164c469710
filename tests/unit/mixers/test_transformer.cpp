// transformer: exact softmax attention, the reference every other mixer is compared with.
#include "mixer_harness.h"

using namespace lra::test;

TEST(Transformer, ShapesFiniteAndGradients) {
  auto m = make_mixer("transformer", small_spec());
  EXPECT_TRUE(shapes_finite_and_grads(*m, 2, 40, 32));
}

TEST(Transformer, EqualsTheReferenceAttention) {
  auto m = make_mixer("transformer", small_spec());
  auto x = random_input(3, 50, 32);
  auto mask = lengths_mask(50, {50, 31, 7});
  torch::NoGradGuard g;
  EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, false, /*mask_queries=*/true)), 1e-6);
  // Real positions do not depend on how padded queries are treated.
  EXPECT_LT(max_diff_real(m->forward(x, mask), reference_attention(*m, x, mask, 4, false), mask), 1e-6);
}

TEST(Transformer, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("transformer", small_spec()), 48, 32));
}

TEST(Transformer, CausalModeReadsNoFuture) {
  ASSERT_TRUE(mixer_capabilities("transformer") & LRA_CAP_CAUSAL);
  auto m = make_mixer("transformer", small_spec(32, 4, 64, true));
  EXPECT_TRUE(no_future_leak(*m, 40, 32));
  auto x = random_input(2, 40, 32);
  auto mask = lengths_mask(40, {40, 40});
  torch::NoGradGuard g;
  EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, true)), 1e-6);
}

TEST(Transformer, RecordsAttentionProbabilities) {
  auto m = make_mixer("transformer", small_spec());
  m->set_record_attention(true);
  torch::NoGradGuard g;
  m->forward(random_input(2, 20, 32), lengths_mask(20, {20, 10}));
  auto p = m->last_attention();
  ASSERT_TRUE(p.defined());
  EXPECT_EQ(p.sizes(), torch::IntArrayRef({2, 4, 20, 20}));
  EXPECT_LT(max_abs_diff(p.sum(-1), torch::ones({2, 4, 20})), 1e-5);
  EXPECT_LT(p[1].narrow(1, 0, 10).narrow(-1, 10, 10).abs().max().item<double>(), 1e-6)
      << "padded keys must get no weight from real queries";
  // A padded query's row is uniform over every key, as LRA's outer-product mask makes it.
  EXPECT_LT(max_abs_diff(p[1].narrow(1, 10, 10), torch::full({4, 10, 20}, 1.0 / 20)), 1e-6);
}
