// s4d: the FFT convolution with the closed-form (Vandermonde) kernel must equal
// the state-space recurrence it discretises, stepped one position at a time
// in float64 from the mixer's own parameters.
#include <ATen/ATen.h>

#include <complex>

#include "mixer_harness.h"
#include "model/backbone.h"

using namespace lra::test;

namespace {

// The layer by definition: ZOH-discretised diagonal recurrences, forward
// (positions <= t) and, with two directions, backward (positions > t), then
// D skip, GELU and the GLU output projection. Masked inputs are zero.
torch::Tensor recurrence_reference(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask) {
  auto dt = at::exp(weight(m, "log_dt"));                                     // [H]
  auto a = at::complex(-at::exp(weight(m, "log_A_real")), weight(m, "A_imag"));  // [H, M]
  auto da = at::exp(a * dt.unsqueeze(-1));
  auto db = (da - 1.0) / a;
  auto c = at::view_as_complex(weight(m, "C").contiguous());  // [dirs, H, M]
  const int64_t B = x.size(0), L = x.size(1), H = x.size(2), dirs = c.size(0);
  auto u = x * mask.to(x.scalar_type()).unsqueeze(-1);  // [B, L, H]
  auto y = u * weight(m, "D");
  // Forward: h_t = dA h_{t-1} + dB u_t, y_t += 2 Re(C h_t).
  auto h = at::zeros({B, H, a.size(1)}, a.options());
  for (int64_t t = 0; t < L; ++t) {
    h = da * h + db * u.select(1, t).unsqueeze(-1);
    y.select(1, t).add_(2.0 * at::real((c[0] * h).sum(-1)));
  }
  if (dirs == 2) {  // Backward: y_t += 2 Re(C' h'), h' holding positions > t only.
    h = at::zeros_like(h);
    for (int64_t t = L - 1; t >= 0; --t) {
      y.select(1, t).add_(2.0 * at::real((c[1] * h).sum(-1)));
      h = da * h + db * u.select(1, t).unsqueeze(-1);
    }
  }
  auto z = at::matmul(at::gelu(y), weight(m, "output_linear.weight").t()) + weight(m, "output_linear.bias");
  return z.narrow(-1, 0, H) * at::sigmoid(z.narrow(-1, H, H));
}

int64_t state_size(lra::Mixer& m) { return 2 * weight(m, "A_imag").size(1); }

}  // namespace

TEST(S4D, DeclaresCausalAndPadding) {
  const auto caps = mixer_capabilities("s4d");
  EXPECT_TRUE(caps & LRA_CAP_CAUSAL);
  EXPECT_TRUE(caps & LRA_CAP_PADDING_MASK);
  EXPECT_FALSE(caps & LRA_CAP_ATTENTION_PROBS);
  EXPECT_FALSE(caps & LRA_CAP_ROTARY);
}

TEST(S4D, ShapesFiniteAndGradients) {
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("s4d", small_spec()), 2, 40, 32));
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("s4d", small_spec(32, 4, 64, true)), 2, 40, 32));
}

TEST(S4D, FftConvolutionEqualsRecurrenceInFloat64) {
  for (const bool causal : {false, true})
    for (const std::string init : {"lin", "inv"}) {
      SCOPED_TRACE(std::string(causal ? "causal" : "bidirectional") + ", init " + init);
      auto m = make_mixer("s4d", small_spec(16, 4, 64, causal), {{"init", init}, {"d_state", int64_t{8}}});
      m->to(torch::kFloat64);
      auto x = random_input(3, 37, 16).to(torch::kFloat64);
      auto mask = lengths_mask(37, {37, 20, 5});
      mask[0][11] = false;  // a hole inside a sequence, as the image tasks' pixel mask makes
      torch::NoGradGuard g;
      const double diff = max_abs_diff(m->forward(x, mask), recurrence_reference(*m, x, mask));
      EXPECT_LT(diff, 1e-10);
    }
}

TEST(S4D, Float32MatchesFloat64) {
  auto m = make_mixer("s4d", small_spec());
  auto x = random_input(2, 300, 32);
  auto mask = lengths_mask(300, {300, 123});
  torch::NoGradGuard g;
  auto y32 = m->forward(x, mask);
  m->to(torch::kFloat64);
  auto y64 = m->forward(x.to(torch::kFloat64), mask);
  EXPECT_LT(max_abs_diff(y32.to(torch::kFloat64), y64), 1e-4);
}

TEST(S4D, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("s4d", small_spec()), 48, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer("s4d", small_spec(32, 4, 64, true)), 48, 32));
}

TEST(S4D, CausalModeReadsNoFutureAndBidirectionalDoes) {
  EXPECT_TRUE(no_future_leak(*make_mixer("s4d", small_spec(32, 4, 64, true)), 40, 32, 1e-5));
  EXPECT_FALSE(no_future_leak(*make_mixer("s4d", small_spec()), 40, 32, 1e-5));
  // bidirectional = false is one kernel even when the spec is not causal.
  EXPECT_TRUE(no_future_leak(*make_mixer("s4d", small_spec(), {{"bidirectional", false}}), 40, 32, 1e-5));
}

TEST(S4D, AutoStateStaysWithinTheAttentionBudget) {
  // d 32, qkv 32: the attention layer has 4 * 32 * 32 = 4096 parameters, the
  // bound is 1.1x that (4505 whole parameters).
  using lra::host::count_parameters;
  for (const bool causal : {false, true}) {
    auto spec = small_spec(32, 4, 64, causal);
    auto m = make_mixer("s4d", spec);
    const int64_t cap = 4 * 32 * 32 * 11 / 10;
    EXPECT_LE(count_parameters(*m), cap);
    // Doubling the state would break the bound (or the state is already 64).
    const int64_t n = state_size(*m);
    if (n < 64) EXPECT_GT(count_parameters(*make_mixer("s4d", spec, {{"d_state", 2 * n}})), cap);
  }
  // Wide layers get S4D's default N = 64.
  EXPECT_EQ(state_size(*make_mixer("s4d", small_spec(128, 4, 64))), 64);
  // An explicit value is used as given.
  EXPECT_EQ(state_size(*make_mixer("s4d", small_spec(), {{"d_state", int64_t{6}}})), 6);
}

TEST(S4D, InitialisationFollowsThePaper) {
  auto lin = make_mixer("s4d", small_spec(16, 4, 64), {{"d_state", int64_t{8}}});
  auto imag = weight(*lin, "A_imag")[0];
  for (int64_t n = 0; n < 4; ++n) EXPECT_NEAR(imag[n].item<double>(), M_PI * n, 1e-5);
  EXPECT_NEAR(at::exp(weight(*lin, "log_A_real")).max().item<double>(), 0.5, 1e-7);
  auto dt = at::exp(weight(*lin, "log_dt"));
  EXPECT_GE(dt.min().item<double>(), 0.001 - 1e-9);
  EXPECT_LE(dt.max().item<double>(), 0.1 + 1e-9);
  auto inv = make_mixer("s4d", small_spec(16, 4, 64), {{"d_state", int64_t{8}}, {"init", std::string("inv")}});
  // S4D-Inv: (N/pi) (N/(2n+1) - 1), N = 8.
  for (int64_t n = 0; n < 4; ++n)
    EXPECT_NEAR(weight(*inv, "A_imag")[0][n].item<double>(), 8.0 / M_PI * (8.0 / (2 * n + 1) - 1), 1e-5);
}

TEST(S4D, RejectsBadOptions) {
  EXPECT_THROW(make_mixer("s4d", small_spec(), {{"d_state", int64_t{7}}}), lra::Error);
  EXPECT_THROW(make_mixer("s4d", small_spec(), {{"d_state", int64_t{-2}}}), lra::Error);
  EXPECT_THROW(make_mixer("s4d", small_spec(), {{"init", std::string("legs")}}), lra::Error);
  EXPECT_THROW(make_mixer("s4d", small_spec(), {{"dt_min", 0.0}}), lra::Error);
  EXPECT_THROW(make_mixer("s4d", small_spec(), {{"dt_min", 0.2}, {"dt_max", 0.1}}), lra::Error);
}

TEST(S4D, GradientsMatchFiniteDifferencesInFloat64) {
  for (const bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "bidirectional");
    auto m = make_mixer("s4d", small_spec(8, 2, 64, causal), {{"d_state", int64_t{4}}});
    m->to(torch::kFloat64);
    auto x = random_input(2, 13, 8).to(torch::kFloat64).requires_grad_(true);
    auto mask = lengths_mask(13, {13, 9});
    auto probe = torch::randn({2, 13, 8}, torch::kFloat64);
    auto loss = [&] { return (m->forward(x, mask) * probe).sum(); };
    auto l = loss();
    l.backward();
    std::vector<torch::Tensor> wrt = {x};
    for (const auto& p : m->parameters()) wrt.push_back(p);
    torch::NoGradGuard g;
    for (auto& t : wrt) {
      auto flat = t.view({-1});
      for (int64_t i = 0; i < flat.numel(); i += std::max<int64_t>(1, flat.numel() / 7)) {
        const double h = 1e-6, old = flat[i].item<double>();
        flat[i].fill_(old + h);
        const double up = loss().item<double>();
        flat[i].fill_(old - h);
        const double down = loss().item<double>();
        flat[i].fill_(old);
        EXPECT_NEAR(t.grad().view({-1})[i].item<double>(), (up - down) / (2 * h), 1e-6) << "index " << i;
      }
    }
  }
}

TEST(S4D, Float32GradientsMatchFloat64) {
  // LibTorch 1.13's float32 gelu_backward failed this before the plugin made
  // GELU's input contiguous (plugins/s4d/s4d.cpp): training then learned nothing.
  auto x = random_input(4, 65, 128);
  auto mask = lengths_mask(65, {65, 40, 30, 21});
  EXPECT_TRUE(float32_gradients_match_float64(*make_mixer("s4d", small_spec(128, 4, 128)), x, mask));
  EXPECT_TRUE(float32_gradients_match_float64(*make_mixer("s4d", small_spec(128, 4, 128, true)), x, mask));
}
