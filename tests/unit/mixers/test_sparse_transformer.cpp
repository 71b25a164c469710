// sparse_transformer: Child et al.'s fixed pattern (own block + summary keys), computed blocked.
#include "mixer_harness.h"

#include <functional>
#include <stdexcept>
#include <string>

#include "lra/attention.h"

using namespace lra::test;

namespace {

struct Fixed {
  int64_t block, c;
  bool block_start;
  int64_t global;
};

// The fixed pattern written out in full, the way LRA's build_mask does
// (Fixed1 OR Fixed2 on positions shifted past the global ones), but
// bidirectional unless `causal`.
torch::Tensor fixed_pattern(int64_t L, const Fixed& f, bool causal) {
  auto pos = torch::arange(L);
  auto p = (pos - f.global).clamp_min(0);  // pattern coordinates
  auto same_block = p.div(f.block, "floor").unsqueeze(1) == p.div(f.block, "floor").unsqueeze(0);
  auto r = p.remainder(f.block);
  auto summary = r.ge(f.block - f.c);
  if (f.block_start) summary = summary.logical_or(r.eq(0));
  auto allowed = same_block.logical_or(summary.unsqueeze(0));
  auto is_global = pos.lt(f.global);
  allowed = allowed.logical_or(is_global.unsqueeze(0)).logical_or(is_global.unsqueeze(1));
  if (causal) allowed = allowed.logical_and(lra::ops::causal_allowed(L, torch::kCPU));
  return allowed;
}

// chunk_elements 1: one block per recomputation chunk, so that the small
// tests walk many chunks (the default would fit them in one).
lra::Params opts(const Fixed& f, int64_t chunk_elements = 1) {
  return {{"block_size", f.block},
          {"c", f.c},
          {"block_start_summary", f.block_start},
          {"global_tokens", f.global},
          {"chunk_elements", chunk_elements}};
}

// Gradients of sum(y · w) for x and every parameter.
std::vector<torch::Tensor> gradients(lra::Mixer& m, const torch::Tensor& x0,
                                     const std::function<torch::Tensor(const torch::Tensor&)>& f) {
  auto x = x0.clone().requires_grad_(true);
  m.zero_grad();
  auto y = f(x);
  torch::manual_seed(11);
  (y * torch::randn_like(y)).sum().backward();
  std::vector<torch::Tensor> g = {x.grad().clone()};
  for (const auto& p : m.parameters()) g.push_back(p.grad().clone());
  return g;
}

}  // namespace

TEST(SparseTransformer, ShapesFiniteAndGradients) {
  auto m = make_mixer("sparse_transformer", small_spec(), opts({8, 2, true, 1}));
  EXPECT_TRUE(shapes_finite_and_grads(*m, 2, 45, 32));
}

TEST(SparseTransformer, OneBlockCoveringTheSequenceEqualsTheReference) {
  auto x = random_input(3, 50, 32);
  auto mask = lengths_mask(50, {50, 31, 7});
  torch::NoGradGuard g;
  for (int64_t global : {0, 1}) {
    auto m = make_mixer("sparse_transformer", small_spec(), opts({64, 10, true, global}));
    EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, false)), 1e-5);
  }
}

TEST(SparseTransformer, MatchesTheDenseFixedPattern) {
  // Lengths that are not multiples of the block, padding, with and without
  // LRA's block-start summary key and the global (CLS) prefix.
  auto x = random_input(3, 83, 32);
  auto mask = lengths_mask(83, {83, 50, 12});
  torch::NoGradGuard g;
  for (const Fixed& f : {Fixed{10, 3, true, 1}, Fixed{10, 3, false, 0}, Fixed{7, 7, false, 2}, Fixed{16, 0, false, 0},
                         Fixed{50, 10, true, 1}}) {
    auto m = make_mixer("sparse_transformer", small_spec(), opts(f));
    auto ref = dense_pattern_reference(*m, x, mask, fixed_pattern(83, f, false), 4);
    EXPECT_LT(max_diff_real(m->forward(x, mask), ref, mask), 1e-5)
        << "block " << f.block << " c " << f.c << " start " << f.block_start << " global " << f.global;
  }
}

TEST(SparseTransformer, DefaultsAreLrasPattern) {
  // block 50, c 10, block-start summary, CLS global; L = 160 spans 4 blocks.
  auto m = make_mixer("sparse_transformer", small_spec());
  auto x = random_input(2, 160, 32);
  auto mask = lengths_mask(160, {160, 120});
  torch::NoGradGuard g;
  auto ref = dense_pattern_reference(*m, x, mask, fixed_pattern(160, {50, 10, true, 1}, false), 4);
  EXPECT_LT(max_diff_real(m->forward(x, mask), ref, mask), 1e-5);
}

TEST(SparseTransformer, CausalModeMatchesTheDenseCausalPattern) {
  auto x = random_input(2, 83, 32);
  auto mask = lengths_mask(83, {83, 83});
  torch::NoGradGuard g;
  for (const Fixed& f : {Fixed{10, 3, true, 1}, Fixed{9, 2, false, 0}}) {
    auto m = make_mixer("sparse_transformer", small_spec(32, 4, 128, true), opts(f));
    auto ref = dense_pattern_reference(*m, x, mask, fixed_pattern(83, f, true), 4);
    EXPECT_LT(max_abs_diff(m->forward(x, mask), ref), 1e-5) << "block " << f.block;
  }
}

TEST(SparseTransformer, OneCausalBlockEqualsTheCausalReference) {
  auto m = make_mixer("sparse_transformer", small_spec(32, 4, 64, true), opts({64, 10, true, 1}));
  auto x = random_input(2, 40, 32);
  auto mask = lengths_mask(40, {40, 40});
  torch::NoGradGuard g;
  EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, true)), 1e-5);
}

TEST(SparseTransformer, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("sparse_transformer", small_spec(), opts({8, 2, true, 1})), 48, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer("sparse_transformer", small_spec(), opts({7, 3, false, 0})), 50, 32));
}

TEST(SparseTransformer, CausalModeReadsNoFuture) {
  ASSERT_TRUE(mixer_capabilities("sparse_transformer") & LRA_CAP_CAUSAL);
  auto m = make_mixer("sparse_transformer", small_spec(32, 4, 64, true), opts({8, 2, true, 1}));
  EXPECT_TRUE(no_future_leak(*m, 40, 32));
}

TEST(SparseTransformer, RejectsBadOptions) {
  EXPECT_THROW(make_mixer("sparse_transformer", small_spec(), opts({8, 2, true, 1}, 0)), lra::Error);
  EXPECT_THROW(make_mixer("sparse_transformer", small_spec(), opts({0, 0, true, 1})), lra::Error);
  EXPECT_THROW(make_mixer("sparse_transformer", small_spec(), opts({8, 9, true, 1})), lra::Error);
  EXPECT_THROW(make_mixer("sparse_transformer", small_spec(), opts({8, 2, true, -1})), lra::Error);
}

TEST(SparseTransformer, GradientsMatchTheDensePattern) {
  // The shared-key part has a hand-written backward: compare every gradient.
  auto x = random_input(2, 83, 32);
  auto mask = lengths_mask(83, {83, 50});
  for (bool causal : {false, true}) {
    const Fixed f{10, 3, true, 1};
    auto m = make_mixer("sparse_transformer", small_spec(32, 4, 128, causal), opts(f));
    auto allowed = fixed_pattern(83, f, causal);
    auto real = mask.unsqueeze(-1).to(torch::kFloat);  // padded rows' outputs are not compared
    auto mine = gradients(*m, x, [&](const torch::Tensor& in) { return m->forward(in, mask) * real; });
    auto ref = gradients(*m, x, [&](const torch::Tensor& in) {
      return dense_pattern_reference(*m, in, mask, allowed, 4) * real;
    });
    for (size_t i = 0; i < mine.size(); ++i)
      EXPECT_LT(max_abs_diff(mine[i], ref[i]), 1e-5) << "gradient " << i << (causal ? " (causal)" : "");
  }
}

TEST(SparseTransformer, DropoutMasksAreRecomputedExactlyInBackward) {
  // In training mode the backward pass regenerates the forward's dropout
  // masks; a directional finite difference (same seed each forward) checks it.
  auto spec = small_spec();
  spec.attention_dropout = 0.3;
  auto m = make_mixer("sparse_transformer", spec, opts({8, 2, true, 1}));
  m->train();
  m->to(torch::kDouble);
  auto x = random_input(2, 45, 32).to(torch::kDouble);
  auto mask = lengths_mask(45, {45, 30});
  auto w = torch::randn({2, 45, 32}, torch::kDouble);
  auto dir = torch::randn({2, 45, 32}, torch::kDouble);
  auto f = [&](const torch::Tensor& in) {
    torch::manual_seed(5);
    return (m->forward(in, mask) * w).sum();
  };
  auto xg = x.clone().requires_grad_(true);
  f(xg).backward();
  const double analytic = (xg.grad() * dir).sum().item<double>();
  torch::NoGradGuard g;
  const double eps = 1e-6;
  const double numeric = (f(x + eps * dir).item<double>() - f(x - eps * dir).item<double>()) / (2 * eps);
  EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::abs(numeric)));
  // And dropout does act: two different seeds give different outputs.
  torch::manual_seed(1);
  auto a = m->forward(x, mask);
  torch::manual_seed(2);
  EXPECT_GT(max_abs_diff(a, m->forward(x, mask)), 1e-3);
}

TEST(SparseTransformer, ChunkingDoesNotChangeResults) {
  auto x = random_input(2, 83, 32);
  auto mask = lengths_mask(83, {83, 50});
  torch::NoGradGuard g;
  auto one = make_mixer("sparse_transformer", small_spec(), opts({10, 3, true, 1}, 1));
  auto all = make_mixer("sparse_transformer", small_spec(), opts({10, 3, true, 1}, int64_t{1} << 30));
  EXPECT_LT(max_abs_diff(one->forward(x, mask), all->forward(x, mask)), 1e-6);
}

// mask_queries (issue 46): LRA builds the fixed pattern as an L x L bias, so
// pattern and padding are both -1e10 and a padded query's row is uniform over
// every key; real rows are unchanged; no effect in causal mode.
TEST(SparseTransformer, MaskQueriesGivesLrasUniformRowsToPaddedQueries) {
  auto x = random_input(3, 45, 32);
  auto mask = lengths_mask(45, {45, 30, 6});
  const auto all = torch::ones({45, 45}, torch::kBool);
  torch::NoGradGuard g;
  for (int64_t global : {0, 1}) {
    const Fixed f{10, 3, true, global};
    auto options = opts(f);
    auto plain = make_mixer("sparse_transformer", small_spec(), options);
    options["mask_queries"] = true;
    auto lra = make_mixer("sparse_transformer", small_spec(), options);
    const auto y = lra->forward(x, mask);
    EXPECT_LT(max_abs_diff(y, lra_masked_reference(*lra, x, mask, fixed_pattern(45, f, false), all, 4)), 1e-5)
        << "global_tokens " << global;
    EXPECT_TRUE(only_padded_rows_differ(y, plain->forward(x, mask), mask));
    auto causal_options = opts(f);
    auto causal_plain = make_mixer("sparse_transformer", small_spec(32, 4, 64, true), causal_options);
    causal_options["mask_queries"] = true;
    auto causal = make_mixer("sparse_transformer", small_spec(32, 4, 64, true), causal_options);
    EXPECT_LT(max_abs_diff(causal->forward(x, mask), causal_plain->forward(x, mask)), 1e-6);
  }
}
