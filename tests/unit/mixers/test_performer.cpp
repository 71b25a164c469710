// performer: FAVOR+ random-feature attention. An estimator of softmax attention,
// so parity is statistical (error shrinks as features grow); the prefix-sum and
// stabiliser machinery of causal mode is exact and checked exactly.
#include <cstdio>

#include <ATen/ATen.h>
#include <lra/attention.h>

#include "mixer_harness.h"

using namespace lra::test;

namespace {

lra::MixerSpec spec_with(uint64_t seed, int64_t layer = 0, bool causal = false) {
  auto s = small_spec(32, 4, 256, causal);
  s.seed = seed;
  s.layer_index = layer;
  return s;
}

// Mean |performer - softmax attention| over real positions, averaged over
// feature draws (spec.seed); same projections for every draw (make_mixer seed 0).
double mean_error(int64_t features, bool causal) {
  auto x = random_input(2, 64, 32, 7) * 0.5;  // small logits: the kernel estimate is accurate
  auto mask = lengths_mask(64, {64, 40});
  torch::NoGradGuard g;
  double total = 0;
  const int draws = 4;
  for (int s = 0; s < draws; ++s) {
    auto m = make_mixer("performer", spec_with(100 + s, 0, causal), {{"nb_features", features}});
    auto err = (m->forward(x, mask) - reference_attention(*m, x, mask, 4, causal)).abs();
    total += err.masked_select(mask.unsqueeze(-1).expand_as(err)).mean().item<double>();
  }
  return total / draws;
}

}  // namespace

TEST(Performer, DeclaresCausalAndPadding) {
  const auto caps = mixer_capabilities("performer");
  EXPECT_TRUE(caps & LRA_CAP_CAUSAL);
  EXPECT_TRUE(caps & LRA_CAP_PADDING_MASK);
}

TEST(Performer, ShapesFiniteAndGradients) {
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("performer", small_spec()), 2, 40, 32));
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("performer", small_spec(32, 4, 64, true)), 2, 40, 32));
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("performer", small_spec(), {{"kernel", std::string("relu")}}), 2, 40, 32));
  EXPECT_TRUE(shapes_finite_and_grads(
      *make_mixer("performer", small_spec(), {{"kernel", std::string("relu")}, {"nb_features", int64_t{0}}}), 2, 40, 32));
}

TEST(Performer, FeaturesAreABufferNotParameters) {
  auto m = make_mixer("performer", small_spec(), {{"nb_features", int64_t{64}}});
  int64_t params = 0;
  for (const auto& p : m->parameters()) params += p.numel();
  EXPECT_EQ(params, 4 * 32 * 32) << "only the Q/K/V/O projections are trainable";
  bool found = false;
  for (const auto& b : m->named_buffers())
    if (b.key() == "features") {
      found = true;
      EXPECT_EQ(b.value().sizes(), torch::IntArrayRef({64, 8}));
    }
  EXPECT_TRUE(found);
}

TEST(Performer, ErrorAgainstSoftmaxAttentionShrinksAsFeaturesGrow) {
  std::vector<double> err;
  for (int64_t m : {16, 64, 256, 1024}) {
    err.push_back(mean_error(m, false));
    std::printf("  nb_features %4lld: mean |error| %.5f\n", static_cast<long long>(m), err.back());
  }
  for (size_t i = 1; i < err.size(); ++i) EXPECT_LT(err[i], err[i - 1]) << "features x4 at step " << i;
  EXPECT_LT(err.back(), err.front() / 3) << "64x the features: ~1/sqrt(m) would be /8";
  EXPECT_LT(err.back(), 0.01);
}

TEST(Performer, CausalErrorShrinksAsFeaturesGrow) {
  const double small = mean_error(16, true), large = mean_error(1024, true);
  EXPECT_LT(large, small / 3);
  EXPECT_LT(large, 0.01);
}

TEST(Performer, CausalPrefixSumsAreExact) {
  // Causal output at t must equal the bidirectional output of x[:, :t+1] at t
  // (same projections and features): chunked prefix sums and running-max
  // stabilisers change nothing but the order of summation.
  auto x = random_input(2, 45, 32, 5) * 2.0;  // larger inputs: the stabilisers matter
  auto mask = lengths_mask(45, {45, 45});
  torch::NoGradGuard g;
  auto bi = make_mixer("performer", spec_with(3), {{"nb_features", int64_t{32}}});
  for (int64_t chunk : {1, 8, 64}) {
    auto ca = make_mixer("performer", spec_with(3, 0, true), {{"nb_features", int64_t{32}}, {"chunk", chunk}});
    auto y = ca->forward(x, mask);
    for (int64_t t : {0, 7, 8, 20, 44}) {
      auto prefix = x.narrow(1, 0, t + 1);
      auto expect = bi->forward(prefix, mask.narrow(1, 0, t + 1)).select(1, t);
      EXPECT_LT(max_abs_diff(y.select(1, t), expect), 1e-5) << "chunk " << chunk << " t " << t;
    }
  }
}

TEST(Performer, FiniteForLargeLogits) {
  // exp() of logits in the thousands: the max-stabilisers must keep every
  // feature <= 1 and every gradient finite, in both modes.
  for (bool causal : {false, true}) {
    auto m = make_mixer("performer", small_spec(32, 4, 64, causal), {{"chunk", int64_t{16}}});
    auto x = (random_input(2, 40, 32) * 30).requires_grad_(true);
    auto y = m->forward(x, lengths_mask(40, {40, 25}));
    y.pow(2).sum().backward();
    EXPECT_TRUE(torch::isfinite(y).all().item<bool>()) << "causal " << causal;
    EXPECT_TRUE(torch::isfinite(x.grad()).all().item<bool>()) << "causal " << causal;
  }
}

TEST(Performer, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("performer", small_spec()), 48, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer("performer", small_spec(32, 4, 64, true)), 48, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer("performer", small_spec(), {{"kernel", std::string("relu")}}), 48, 32));
}

TEST(Performer, CausalModeReadsNoFuture) {
  EXPECT_TRUE(no_future_leak(*make_mixer("performer", small_spec(32, 4, 64, true), {{"chunk", int64_t{16}}}), 40, 32));
  EXPECT_TRUE(no_future_leak(
      *make_mixer("performer", small_spec(32, 4, 64, true), {{"kernel", std::string("relu")}, {"chunk", int64_t{16}}}),
      40, 32));
}

TEST(Performer, FeaturesAreDeterministicPerSeedAndLayer) {
  auto x = random_input(1, 20, 32);
  auto mask = lengths_mask(20, {20});
  torch::NoGradGuard g;
  auto a = make_mixer("performer", spec_with(1, 0))->forward(x, mask);
  auto b = make_mixer("performer", spec_with(1, 0))->forward(x, mask);
  auto c = make_mixer("performer", spec_with(1, 1))->forward(x, mask);
  EXPECT_EQ(max_abs_diff(a, b), 0.0);
  EXPECT_GT(max_abs_diff(a, c), 1e-6) << "another layer draws other features";
}

TEST(Performer, RedrawOnlyWhileTraining) {
  auto m = make_mixer("performer", small_spec(), {{"redraw", int64_t{1}}});
  auto x = random_input(1, 20, 32);
  auto mask = lengths_mask(20, {20});
  torch::NoGradGuard g;
  auto e1 = m->forward(x, mask), e2 = m->forward(x, mask);  // eval: fixed
  EXPECT_EQ(max_abs_diff(e1, e2), 0.0);
  m->train();
  auto t1 = m->forward(x, mask), t2 = m->forward(x, mask);  // second training forward redraws
  EXPECT_EQ(max_abs_diff(t1, e1), 0.0);
  EXPECT_GT(max_abs_diff(t1, t2), 1e-6);
}

TEST(Performer, RejectsBadOptions) {
  EXPECT_THROW(make_mixer("performer", small_spec(), {{"kernel", std::string("cosine")}}), lra::Error);
  EXPECT_THROW(make_mixer("performer", small_spec(), {{"nb_features", int64_t{0}}}), lra::Error);
  EXPECT_THROW(make_mixer("performer", small_spec(), {{"chunk", int64_t{0}}}), lra::Error);
  EXPECT_THROW(make_mixer("performer", small_spec(), {{"redraw", int64_t{-1}}}), lra::Error);
}

// LRA's reference setting on every task but ListOps (manifests/reference-mixers/lra-v1.toml):
// generalized attention with deterministic ReLU features, out_i = sum_j phi(q_i).phi(k_j) v_j /
// sum_j phi(q_i).phi(k_j), phi(x) = relu(x) + 1e-3 on the raw per-head q and k
// (performer_attention.py:185-186, renormalize_attention=True). Padded keys add nothing.
TEST(Performer, ReluDeterministicIsLraGeneralizedAttention) {
  auto m = make_mixer("performer", small_spec(), {{"kernel", std::string("relu")}, {"nb_features", int64_t{0}}});
  auto x = random_input(2, 24, 32);
  auto mask = lengths_mask(24, {24, 15});
  torch::NoGradGuard g;
  auto heads = [&](const char* w) { return lra::ops::split_heads(torch::matmul(x, weight(*m, w).t()), 4); };
  auto phi = [](const torch::Tensor& t) { return torch::relu(t) + 1e-3; };
  auto fq = phi(heads("proj.q.weight")), fk = phi(heads("proj.k.weight")), v = heads("proj.v.weight");
  auto w = torch::matmul(fq, fk.transpose(-2, -1)) * mask.view({2, 1, 1, 24}).to(torch::kFloat);  // [B, H, L, L]
  auto out = torch::matmul(w, v) / w.sum(-1, true);
  auto expected = torch::matmul(lra::ops::merge_heads(out), weight(*m, "proj.o.weight").t());
  EXPECT_LT(max_diff_real(m->forward(x, mask), expected, mask), 1e-5);
  EXPECT_EQ(m->named_buffers().size(), 0u) << "deterministic features: no projection matrix";
}

// LRA's ListOps setting: FAVOR+ with nb_features = 2 (fewer features than the
// head width) and a fresh draw for every training forward.
TEST(Performer, TwoFeaturesRedrawnEveryTrainingForward) {
  auto m = make_mixer("performer", small_spec(), {{"nb_features", int64_t{2}}, {"redraw", int64_t{1}}});
  EXPECT_EQ(weight(*m, "features").sizes().vec(), (std::vector<int64_t>{2, 8}));
  auto x = random_input(2, 20, 32);
  auto mask = lengths_mask(20, {20, 12});
  m->train();
  std::vector<torch::Tensor> draws;
  for (int i = 0; i < 3; ++i) {
    auto y = m->forward(x, mask);
    EXPECT_TRUE(torch::isfinite(y).all().item<bool>());
    draws.push_back(weight(*m, "features").clone());
  }
  EXPECT_GT(max_abs_diff(draws[0], draws[1]), 1e-6);
  EXPECT_GT(max_abs_diff(draws[1], draws[2]), 1e-6);
}

namespace lra::test {
namespace {

// mask_keys = false is LRA's behaviour (the Table 1 configuration): the mask
// changes nothing, so padding is read as keys; the default honours the mask.
TEST(PerformerMaskKeys, FalseIgnoresTheMaskAsLraDid) { EXPECT_TRUE(mask_keys_false_ignores_the_mask("performer")); }

}  // namespace
}  // namespace lra::test
