// local: softmax attention inside contiguous non-overlapping blocks.
#include "mixer_harness.h"

#include <stdexcept>
#include <string>

#include "lra/attention.h"

using namespace lra::test;

namespace {

// Contiguous blocks: query i may read key j iff i / block == j / block (and j <= i if causal).
torch::Tensor block_pattern(int64_t L, int64_t block, bool causal) {
  auto pos = torch::arange(L);
  auto allowed = (pos.unsqueeze(1).div(block, "floor") == pos.unsqueeze(0).div(block, "floor"));
  if (causal) allowed = allowed.logical_and(lra::ops::causal_allowed(L, torch::kCPU));
  return allowed;
}

}  // namespace

TEST(Local, ShapesFiniteAndGradients) {
  auto m = make_mixer("local", small_spec(), {{"block_size", int64_t{16}}});
  EXPECT_TRUE(shapes_finite_and_grads(*m, 2, 40, 32));  // 40 is not a multiple of 16
}

TEST(Local, OneBlockCoveringTheSequenceEqualsTheReference) {
  auto x = random_input(3, 50, 32);
  auto mask = lengths_mask(50, {50, 31, 7});
  torch::NoGradGuard g;
  for (int64_t block : {50, 64, 1000}) {
    auto m = make_mixer("local", small_spec(), {{"block_size", block}});
    EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, false)), 1e-5)
        << "block_size " << block;
  }
}

TEST(Local, OneCausalBlockEqualsTheCausalReference) {
  auto m = make_mixer("local", small_spec(32, 4, 64, true), {{"block_size", int64_t{64}}});
  auto x = random_input(2, 40, 32);
  auto mask = lengths_mask(40, {40, 40});
  torch::NoGradGuard g;
  EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, true)), 1e-5);
}

TEST(Local, BlocksAreContiguousAndExact) {
  // 70 = 4 blocks of 16 + a partial block of 6 (internally padded).
  auto m = make_mixer("local", small_spec(), {{"block_size", int64_t{16}}});
  auto x = random_input(3, 70, 32);
  auto mask = lengths_mask(70, {70, 45, 9});
  torch::NoGradGuard g;
  auto ref = dense_pattern_reference(*m, x, mask, block_pattern(70, 16, false), 4);
  EXPECT_LT(max_diff_real(m->forward(x, mask), ref, mask), 1e-5);
}

TEST(Local, CausalBlocksAreExact) {
  auto m = make_mixer("local", small_spec(32, 4, 64, true), {{"block_size", int64_t{16}}});
  auto x = random_input(2, 70, 32);
  auto mask = lengths_mask(70, {70, 70});
  torch::NoGradGuard g;
  auto ref = dense_pattern_reference(*m, x, mask, block_pattern(70, 16, true), 4);
  EXPECT_LT(max_abs_diff(m->forward(x, mask), ref), 1e-5);
}

TEST(Local, DefaultBlockIsLrasFifty) {
  // With the default block of 50, positions 49 and 50 are in different blocks.
  auto m = make_mixer("local", small_spec());
  auto x = random_input(1, 100, 32);
  auto mask = lengths_mask(100, {100});
  torch::NoGradGuard g;
  auto ref = dense_pattern_reference(*m, x, mask, block_pattern(100, 50, false), 4);
  EXPECT_LT(max_abs_diff(m->forward(x, mask), ref), 1e-5);
}

TEST(Local, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("local", small_spec(), {{"block_size", int64_t{16}}}), 48, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer("local", small_spec(), {{"block_size", int64_t{7}}}), 50, 32));
}

TEST(Local, CausalModeReadsNoFuture) {
  ASSERT_TRUE(mixer_capabilities("local") & LRA_CAP_CAUSAL);
  auto m = make_mixer("local", small_spec(32, 4, 64, true), {{"block_size", int64_t{16}}});
  EXPECT_TRUE(no_future_leak(*m, 40, 32));
}

TEST(Local, RejectsANonPositiveBlock) {
  EXPECT_THROW(make_mixer("local", small_spec(), {{"block_size", int64_t{0}}}), lra::Error);
}

// mask_queries (issue 46): a padded query's row is uniform over its own
// block's keys, as LRA's outer-product mask makes it; real rows are unchanged
// and the positions that fill the last block are no keys.
TEST(Local, MaskQueriesGivesLrasUniformRowsToPaddedQueries) {
  auto x = random_input(3, 70, 32);  // 4 blocks of 16 + a partial block of 6
  auto mask = lengths_mask(70, {70, 45, 9});
  auto lra = make_mixer("local", small_spec(), {{"block_size", int64_t{16}}, {"mask_queries", true}});
  auto plain = make_mixer("local", small_spec(), {{"block_size", int64_t{16}}});  // same seed, same weights
  torch::NoGradGuard g;
  const auto blocks = block_pattern(70, 16, false);
  const auto y = lra->forward(x, mask);
  EXPECT_LT(max_abs_diff(y, lra_masked_reference(*lra, x, mask, blocks, blocks, 4)), 1e-5);
  EXPECT_TRUE(only_padded_rows_differ(y, plain->forward(x, mask), mask));
  // Causal mode: no effect (a uniform row would read the future).
  auto causal = make_mixer("local", small_spec(32, 4, 64, true), {{"block_size", int64_t{16}}, {"mask_queries", true}});
  auto causal_plain = make_mixer("local", small_spec(32, 4, 64, true), {{"block_size", int64_t{16}}});
  EXPECT_EQ(max_abs_diff(causal->forward(x, mask), causal_plain->forward(x, mask)), 0.0);
}
