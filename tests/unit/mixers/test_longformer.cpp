// longformer: sliding-window attention (+ optional global tokens), computed in chunks.
#include "mixer_harness.h"

#include <stdexcept>
#include <string>

#include "lra/attention.h"

using namespace lra::test;

namespace {

// The Longformer pattern written out in full: key j is in query i's window iff
// -(left - 1) <= j - i <= right with left = w - w/2, right = w/2 (0 if causal);
// the first `global` positions read and are read by everything (causality kept).
torch::Tensor longformer_pattern(int64_t L, int64_t window, int64_t global, bool causal) {
  const int64_t left = window - window / 2, right = causal ? 0 : window / 2;
  auto pos = torch::arange(L);
  auto rel = pos.unsqueeze(0) - pos.unsqueeze(1);  // [i, j] = j - i
  auto allowed = rel.ge(-(left - 1)).logical_and(rel.le(right));
  auto is_global = pos.lt(global);
  allowed = allowed.logical_or(is_global.unsqueeze(0)).logical_or(is_global.unsqueeze(1));
  if (causal) allowed = allowed.logical_and(rel.le(0));
  return allowed;
}

lra::Params opts(int64_t window, int64_t global = 0) {
  return {{"window", window}, {"global_tokens", global}};
}

}  // namespace

TEST(Longformer, ShapesFiniteAndGradients) {
  auto m = make_mixer("longformer", small_spec(), opts(16, 2));
  EXPECT_TRUE(shapes_finite_and_grads(*m, 2, 45, 32));
}

TEST(Longformer, WindowCoveringTheSequenceEqualsTheReference) {
  auto x = random_input(3, 50, 32);
  auto mask = lengths_mask(50, {50, 31, 7});
  torch::NoGradGuard g;
  // 512 is LRA's default: 256 to each side covers any sequence up to 257 tokens.
  for (int64_t window : {100, 101, 512}) {
    auto m = make_mixer("longformer", small_spec(), opts(window));
    EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, false)), 1e-5)
        << "window " << window;
  }
}

TEST(Longformer, CausalWindowCoveringTheSequenceEqualsTheCausalReference) {
  auto m = make_mixer("longformer", small_spec(32, 4, 64, true), opts(512));
  auto x = random_input(2, 40, 32);
  auto mask = lengths_mask(40, {40, 40});
  torch::NoGradGuard g;
  EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, true)), 1e-5);
}

TEST(Longformer, SmallWindowsMatchTheDenseBand) {
  // Even and odd windows, lengths that are not multiples of the chunk, padding.
  auto x = random_input(3, 77, 32);
  auto mask = lengths_mask(77, {77, 40, 11});
  torch::NoGradGuard g;
  for (int64_t window : {1, 2, 7, 10, 33}) {
    auto m = make_mixer("longformer", small_spec(), opts(window));
    auto ref = dense_pattern_reference(*m, x, mask, longformer_pattern(77, window, 0, false), 4);
    EXPECT_LT(max_diff_real(m->forward(x, mask), ref, mask), 1e-5) << "window " << window;
  }
}

TEST(Longformer, GlobalTokensMatchTheDensePattern) {
  auto x = random_input(3, 77, 32);
  auto mask = lengths_mask(77, {77, 40, 11});
  torch::NoGradGuard g;
  for (int64_t global : {1, 3, 20}) {
    auto m = make_mixer("longformer", small_spec(), opts(10, global));
    auto ref = dense_pattern_reference(*m, x, mask, longformer_pattern(77, 10, global, false), 4);
    EXPECT_LT(max_diff_real(m->forward(x, mask), ref, mask), 1e-5) << "global_tokens " << global;
  }
}

TEST(Longformer, CausalBandMatchesTheDensePattern) {
  auto x = random_input(2, 77, 32);
  auto mask = lengths_mask(77, {77, 77});
  torch::NoGradGuard g;
  for (int64_t global : {0, 2}) {
    auto m = make_mixer("longformer", small_spec(32, 4, 128, true), opts(12, global));
    auto ref = dense_pattern_reference(*m, x, mask, longformer_pattern(77, 12, global, true), 4);
    EXPECT_LT(max_abs_diff(m->forward(x, mask), ref), 1e-5) << "global_tokens " << global;
  }
}

TEST(Longformer, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("longformer", small_spec(), opts(12)), 48, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer("longformer", small_spec(), opts(9, 2)), 50, 32));
}

TEST(Longformer, CausalModeReadsNoFuture) {
  ASSERT_TRUE(mixer_capabilities("longformer") & LRA_CAP_CAUSAL);
  EXPECT_TRUE(no_future_leak(*make_mixer("longformer", small_spec(32, 4, 64, true), opts(12)), 40, 32));
  EXPECT_TRUE(no_future_leak(*make_mixer("longformer", small_spec(32, 4, 64, true), opts(12, 3)), 40, 32));
}

TEST(Longformer, RejectsBadOptions) {
  EXPECT_THROW(make_mixer("longformer", small_spec(), opts(0)), lra::Error);
  EXPECT_THROW(make_mixer("longformer", small_spec(), opts(8, -1)), lra::Error);
}

// mask_queries (issue 46): LRA builds the band as an L x L bias, so band and
// padding are both -1e10 and a padded query's row is uniform over every key;
// real rows are unchanged.
TEST(Longformer, MaskQueriesGivesLrasUniformRowsToPaddedQueries) {
  auto x = random_input(3, 40, 32);
  auto mask = lengths_mask(40, {40, 23, 5});
  const auto all = torch::ones({40, 40}, torch::kBool);
  torch::NoGradGuard g;
  for (int64_t global : {0, 1}) {
    auto options = opts(8, global);
    auto plain = make_mixer("longformer", small_spec(), options);
    options["mask_queries"] = true;
    auto lra = make_mixer("longformer", small_spec(), options);
    const auto y = lra->forward(x, mask);
    EXPECT_LT(max_abs_diff(y, lra_masked_reference(*lra, x, mask, longformer_pattern(40, 8, global, false), all, 4)),
              1e-5)
        << "global_tokens " << global;
    EXPECT_TRUE(only_padded_rows_differ(y, plain->forward(x, mask), mask));
  }
}
