// linear_transformer: linear attention with elu+1 features. Exact maths, so the
// O(L) plugin must equal the quadratic formulation of the same kernel.
#include <ATen/ATen.h>

#include "lra/attention.h"
#include "mixer_harness.h"

using namespace lra::test;

namespace {

torch::Tensor param(lra::Mixer& m, const std::string& name) {
  for (const auto& p : m.named_parameters())
    if (p.key() == name) return p.value();
  throw std::runtime_error("no parameter " + name);
}

// The quadratic form: A = phi(Q) phi(K)^T with padded keys (and, if causal,
// future keys) zeroed, rows normalised by their sums + eps.
torch::Tensor quadratic_reference(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask, int64_t heads,
                                  bool causal, double eps = 1e-6) {
  auto phi = [](const torch::Tensor& t) { return at::elu(t) + 1.0; };
  auto q = phi(lra::ops::split_heads(torch::matmul(x, param(m, "proj.q.weight").t()), heads));
  auto k = phi(lra::ops::split_heads(torch::matmul(x, param(m, "proj.k.weight").t()), heads));
  auto v = lra::ops::split_heads(torch::matmul(x, param(m, "proj.v.weight").t()), heads);
  auto a = torch::matmul(q, k.transpose(-2, -1));                    // [B, H, L, L]
  a = a * mask.to(torch::kFloat).unsqueeze(1).unsqueeze(2);
  if (causal) a = a * lra::ops::causal_allowed(x.size(1), x.device()).to(torch::kFloat);
  auto out = torch::matmul(a, v) / (a.sum(-1, true) + eps);
  return torch::matmul(lra::ops::merge_heads(out), param(m, "proj.o.weight").t());
}

}  // namespace

TEST(LinearTransformer, DeclaresCausalAndPadding) {
  const auto caps = mixer_capabilities("linear_transformer");
  EXPECT_TRUE(caps & LRA_CAP_CAUSAL);
  EXPECT_TRUE(caps & LRA_CAP_PADDING_MASK);
  EXPECT_FALSE(caps & LRA_CAP_ATTENTION_PROBS);
}

TEST(LinearTransformer, ShapesFiniteAndGradients) {
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("linear_transformer", small_spec()), 2, 40, 32));
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("linear_transformer", small_spec(32, 4, 64, true)), 2, 40, 32));
}

TEST(LinearTransformer, EqualsQuadraticFormulation) {
  auto m = make_mixer("linear_transformer", small_spec());
  auto x = random_input(3, 50, 32);
  auto mask = lengths_mask(50, {50, 31, 7});
  torch::NoGradGuard g;
  EXPECT_LT(max_abs_diff(m->forward(x, mask), quadratic_reference(*m, x, mask, 4, false)), 1e-5);
}

TEST(LinearTransformer, CausalEqualsQuadraticFormulationForAnyChunk) {
  auto x = random_input(3, 50, 32);
  auto mask = lengths_mask(50, {50, 31, 7});
  torch::NoGradGuard g;
  // 50 is not a multiple of 16 or 7: internal padding of the last chunk is exercised.
  for (int64_t chunk : {1, 7, 16, 64}) {
    auto m = make_mixer("linear_transformer", small_spec(32, 4, 64, true), {{"chunk", chunk}});
    EXPECT_LT(max_abs_diff(m->forward(x, mask), quadratic_reference(*m, x, mask, 4, true)), 1e-5)
        << "chunk " << chunk;
  }
}

TEST(LinearTransformer, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("linear_transformer", small_spec()), 48, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer("linear_transformer", small_spec(32, 4, 64, true)), 48, 32));
}

TEST(LinearTransformer, CausalModeReadsNoFuture) {
  auto m = make_mixer("linear_transformer", small_spec(32, 4, 64, true), {{"chunk", int64_t{16}}});
  EXPECT_TRUE(no_future_leak(*m, 40, 32));
}

TEST(LinearTransformer, RejectsBadOptions) {
  EXPECT_THROW(make_mixer("linear_transformer", small_spec(), {{"chunk", int64_t{0}}}), lra::Error);
  EXPECT_THROW(make_mixer("linear_transformer", small_spec(), {{"eps", -1.0}}), lra::Error);
}

namespace lra::test {
namespace {

// mask_keys = false is LRA's behaviour (the Table 1 configuration): the mask
// changes nothing, so padding is read as keys; the default honours the mask.
TEST(LinearTransformerMaskKeys, FalseIgnoresTheMaskAsLraDid) { EXPECT_TRUE(mask_keys_false_ignores_the_mask("linear_transformer")); }

}  // namespace
}  // namespace lra::test
