// mamba2: the Mamba-2 selective SSM layer computed with the chunked SSD
// algorithm. Exact maths, so in float64 the chunked matrix-multiply form must
// equal a naive step-by-step recurrence written here from the mixer's named
// parameters, for any chunk size, length, direction and mask pattern.
#include <ATen/ATen.h>

#include "mixer_harness.h"
#include "model/backbone.h"

using namespace lra::test;

namespace {

const char* kName = "mamba2";

// One scan direction's parameters, by the names the plugin registers.
struct DirParams {
  torch::Tensor conv_w, conv_b, A_log, dt_bias, D;
};

DirParams dir_params(lra::Mixer& m, const std::string& suffix) {
  return {weight(m, "conv1d" + suffix + ".weight"), weight(m, "conv1d" + suffix + ".bias"),
          weight(m, "A_log" + suffix), weight(m, "dt_bias" + suffix), weight(m, "D" + suffix)};
}

// The sequential recurrence of one direction. xBC [B, L, E+2N] (zero at masked
// positions), dt_raw [B, L, H], real [B, L] bool. The forward direction visits
// t = 0 .. L-1 with a causal conv (reads t-K+1 .. t); the reverse one visits
// t = L-1 .. 0 with the mirrored conv (reads t .. t+K-1). A masked step is
// skipped: the state is left exactly as it was.
torch::Tensor scan_reference(const DirParams& d, const torch::Tensor& xBC, const torch::Tensor& dt_raw,
                             const torch::Tensor& real, int64_t H, int64_t N, bool reverse) {
  const int64_t B = xBC.size(0), L = xBC.size(1), C = xBC.size(2), E = C - 2 * N, P = E / H;
  const int64_t K = d.conv_w.size(-1);
  auto w = d.conv_w.squeeze(1);  // [C, K]
  auto A = -torch::exp(d.A_log);
  auto h = torch::zeros({B, H, P, N}, xBC.options());
  std::vector<torch::Tensor> ys(L);
  for (int64_t s = 0; s < L; ++s) {
    const int64_t t = reverse ? L - 1 - s : s;
    auto u = d.conv_b.unsqueeze(0).expand({B, C}).clone();
    for (int64_t j = 0; j < K; ++j) {
      const int64_t src = reverse ? t + (K - 1) - j : t - (K - 1) + j;
      if (src >= 0 && src < L) u = u + w.select(1, j) * xBC.select(1, src);
    }
    u = torch::silu(u);
    auto xt = u.narrow(1, 0, E).reshape({B, H, P});
    auto Bt = u.narrow(1, E, N).reshape({B, 1, 1, N});
    auto Ct = u.narrow(1, E + N, N).reshape({B, 1, 1, N});
    auto dt = torch::softplus(dt_raw.select(1, t) + d.dt_bias).reshape({B, H, 1, 1});
    auto next = torch::exp(dt * A.reshape({1, H, 1, 1})) * h + dt * xt.unsqueeze(-1) * Bt;
    h = torch::where(real.select(1, t).reshape({B, 1, 1, 1}), next, h);
    ys[t] = (h * Ct).sum(-1) + d.D.reshape({1, H, 1}) * xt;
  }
  return torch::stack(ys, 1).reshape({B, L, E});
}

// The whole layer, naively: in_proj, zeroed masked conv inputs, the scans,
// gated RMSNorm (norm_before_gate = False, eps 1e-5), out_proj.
torch::Tensor layer_reference(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask, int64_t H,
                              bool causal) {
  auto w_in = weight(m, "in_proj.weight");
  auto norm_w = weight(m, "norm.weight");
  const int64_t E = norm_w.size(0), N = (w_in.size(0) - 2 * E - H) / 2;
  auto zx = torch::matmul(x, w_in.t());
  auto z = zx.narrow(-1, 0, E);
  auto xBC = zx.narrow(-1, E, E + 2 * N) * mask.unsqueeze(-1).to(x.scalar_type());
  auto dt_raw = zx.narrow(-1, 2 * E + 2 * N, H);
  auto y = scan_reference(dir_params(m, ""), xBC, dt_raw, mask, H, N, false);
  if (!causal) y = y + scan_reference(dir_params(m, "_b"), xBC, dt_raw, mask, H, N, true);
  auto g = y * torch::silu(z);
  g = g / torch::sqrt(g.pow(2).mean(-1, true) + 1e-5) * norm_w;
  return torch::matmul(g, weight(m, "out_proj.weight").t());
}

// Padding of mixed lengths and holes in the middle (as Image/Pathfinder mask
// pixels), a leading gap, and an example with no real position at all.
torch::Tensor holes_mask(int64_t L) {
  auto m = torch::ones({4, L}, torch::kBool);
  m[0].narrow(0, 10, 10).fill_(false);
  m[0].narrow(0, L - 5, 5).fill_(false);
  for (int64_t t = 1; t < L; t += 3) m[1][t] = false;
  m[2].narrow(0, 0, 5).fill_(false);
  m[2].narrow(0, 30, 5).fill_(false);
  m[3].fill_(false);
  return m;
}

int64_t d_state_of(lra::Mixer& m, const lra::MixerSpec& s) {
  return (weight(m, "in_proj.weight").size(0) - 2 * s.qkv_dim - s.heads) / 2;
}

lra::MixerSpec spec_of(int64_t d_model, int64_t qkv, int64_t heads, bool causal) {
  auto s = small_spec(d_model, heads, 64, causal);
  s.qkv_dim = qkv;
  return s;
}

}  // namespace

TEST(Mamba2, DeclaresCausalAndPadding) {
  const auto caps = mixer_capabilities(kName);
  EXPECT_TRUE(caps & LRA_CAP_CAUSAL);
  EXPECT_TRUE(caps & LRA_CAP_PADDING_MASK);
  EXPECT_FALSE(caps & LRA_CAP_ATTENTION_PROBS);
  EXPECT_FALSE(caps & LRA_CAP_ROTARY);
}

TEST(Mamba2, ShapesFiniteAndGradients) {
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer(kName, small_spec()), 2, 40, 32));
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer(kName, small_spec(32, 4, 64, true)), 2, 40, 32));
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer(kName, small_spec(), {{"chunk", int64_t{16}}}), 2, 40, 32));
}

TEST(Mamba2, ParametersPerDirection) {
  auto bi = make_mixer(kName, small_spec());
  auto causal = make_mixer(kName, small_spec(32, 4, 64, true));
  for (const char* n : {"conv1d_b.weight", "conv1d_b.bias", "A_log_b", "dt_bias_b", "D_b"}) {
    EXPECT_NO_THROW(weight(*bi, n)) << n;
    EXPECT_THROW(weight(*causal, n), std::runtime_error) << n;
  }
  // Mamba-2's init: A in [1, 16], dt = softplus(dt_bias) in [1e-3, 1e-1], D = 1, norm weight = 1.
  auto A = torch::exp(weight(*bi, "A_log"));
  EXPECT_TRUE((A >= 1).all().item<bool>() && (A <= 16).all().item<bool>());
  auto dt = torch::softplus(weight(*bi, "dt_bias_b"));
  EXPECT_TRUE((dt >= 0.999e-3).all().item<bool>() && (dt <= 0.1001).all().item<bool>());
  EXPECT_TRUE(weight(*bi, "D").eq(1).all().item<bool>());
  EXPECT_TRUE(weight(*bi, "norm.weight").eq(1).all().item<bool>());
  EXPECT_FALSE(weight(*bi, "A_log").equal(weight(*bi, "A_log_b")));  // separate draws per direction
}

// The core check: chunked SSD (float64) == the sequential recurrence, for chunk
// sizes that do and do not divide L = 50, both directions, both mask kinds.
TEST(Mamba2, EqualsSequentialRecurrenceInFloat64) {
  const int64_t L = 50;
  auto x = random_input(4, L, 32).to(torch::kFloat64);
  const auto lengths = lengths_mask(L, {50, 31, 7, 1});
  const auto holes = holes_mask(L);
  torch::NoGradGuard g;
  for (bool causal : {true, false}) {
    for (int64_t chunk : {1, 7, 16, 64}) {
      for (int64_t d_conv : {int64_t{4}, int64_t{3}}) {
        if (d_conv == 3 && chunk != 7) continue;
        auto m = make_mixer(kName, small_spec(32, 4, 64, causal), {{"chunk", chunk}, {"d_conv", d_conv}});
        m->to(torch::kFloat64);
        for (const auto& mask : {lengths, holes}) {
          const bool is_holes = &mask == &holes;
          auto y = m->forward(x, mask);
          ASSERT_EQ(y.scalar_type(), torch::kFloat64);
          EXPECT_TRUE(torch::isfinite(y).all().item<bool>());
          EXPECT_LT(max_abs_diff(y, layer_reference(*m, x, mask, 4, causal)), 1e-12)
              << (causal ? "causal" : "bidirectional") << " chunk " << chunk << " d_conv " << d_conv
              << (is_holes ? " holes" : " lengths");
        }
        // No mask at all = every position real.
        auto all = torch::ones({4, L}, torch::kBool);
        EXPECT_LT(max_abs_diff(m->forward(x, torch::Tensor()), layer_reference(*m, x, all, 4, causal)), 1e-12);
      }
    }
  }
}

TEST(Mamba2, ChunkDoesNotChangeResults) {
  auto x = random_input(3, 70, 32);
  auto mask = holes_mask(70).narrow(0, 0, 3);
  torch::NoGradGuard g;
  for (bool causal : {true, false}) {
    auto ref = make_mixer(kName, small_spec(32, 4, 128, causal))->forward(x, mask);
    for (int64_t chunk : {1, 5, 16, 33, 128}) {
      auto y = make_mixer(kName, small_spec(32, 4, 128, causal), {{"chunk", chunk}})->forward(x, mask);
      EXPECT_LT(max_abs_diff(y, ref), 1e-5) << "chunk " << chunk;
    }
  }
}

TEST(Mamba2, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer(kName, small_spec()), 48, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer(kName, small_spec(32, 4, 64, true), {{"chunk", int64_t{16}}}), 48, 32));
}

TEST(Mamba2, HolesInTheMiddleAreExact) {
  const int64_t L = 50;
  auto mask = holes_mask(L);
  auto x = random_input(4, L, 32, 5);
  auto noisy = x.clone();
  noisy.masked_scatter_(mask.logical_not().unsqueeze(-1).expand_as(noisy), torch::randn_like(noisy) * 10);
  for (bool causal : {false, true}) {
    auto m = make_mixer(kName, small_spec(32, 4, 64, causal), {{"chunk", int64_t{16}}});
    torch::Tensor a, b;
    {
      torch::NoGradGuard g;
      a = m->forward(x, mask);
      b = m->forward(noisy, mask);
    }
    EXPECT_TRUE(torch::isfinite(a).all().item<bool>() && torch::isfinite(b).all().item<bool>());
    EXPECT_LT(max_diff_real(a, b, mask), 1e-6) << (causal ? "causal" : "bidirectional");
    // Gradients stay finite with holes and an all-masked example.
    auto xg = x.clone().requires_grad_(true);
    m->forward(xg, mask).pow(2).sum().backward();
    EXPECT_TRUE(torch::isfinite(xg.grad()).all().item<bool>());
    for (const auto& p : m->named_parameters())
      EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
  }
}

TEST(Mamba2, CausalModeReadsNoFuture) {
  EXPECT_TRUE(no_future_leak(*make_mixer(kName, small_spec(32, 4, 64, true), {{"chunk", int64_t{16}}}), 40, 32));
  EXPECT_TRUE(no_future_leak(*make_mixer(kName, small_spec(32, 4, 64, true), {{"chunk", int64_t{7}}}), 40, 32));
}

TEST(Mamba2, BidirectionalReadsLaterPositions) {
  auto m = make_mixer(kName, small_spec(), {{"chunk", int64_t{16}}});
  torch::NoGradGuard g;
  auto x = random_input(2, 40, 32, 3);
  auto base = m->forward(x, torch::Tensor());
  auto changed = x.clone();
  changed.select(1, 39).add_(torch::randn({2, 32}) * 5);
  auto y = m->forward(changed, torch::Tensor());
  // Position 0 sees position 39 only through the reversed scan.
  EXPECT_GT(max_abs_diff(y.narrow(1, 0, 1), base.narrow(1, 0, 1)), 1e-4);
}

TEST(Mamba2, AutoStateSizeFitsTheAttentionBudget) {
  struct Case {
    int64_t d, qkv, heads;
  };
  for (const Case c : {Case{32, 32, 4}, Case{128, 128, 4}, Case{512, 512, 8}, Case{32, 16, 2}, Case{4, 4, 4}}) {
    for (bool causal : {false, true}) {
      const auto s = spec_of(c.d, c.qkv, c.heads, causal);
      const double bound = 1.1 * 4.0 * static_cast<double>(c.d * c.qkv);
      auto m = make_mixer(kName, s);
      const int64_t N = d_state_of(*m, s);
      const std::string what = "d " + std::to_string(c.d) + " qkv " + std::to_string(c.qkv) +
                               (causal ? " causal" : " bidirectional") + ": N " + std::to_string(N);
      EXPECT_TRUE(N >= 2 && N <= 128 && (N & (N - 1)) == 0) << what;
      if (static_cast<double>(lra::host::count_parameters(*m)) <= bound) {
        // The largest that fits: doubling it would break the bound (or exceed 128).
        if (N < 128)
          EXPECT_GT(static_cast<double>(lra::host::count_parameters(*make_mixer(kName, s, {{"d_state", 2 * N}}))), bound) << what;
      } else {
        EXPECT_EQ(N, 2) << what << " (nothing fits: smallest allowed)";
      }
    }
  }
  // Known values: ListOps-like width gets Mamba-2's 128, small widths less, a tiny one falls back to 2.
  EXPECT_EQ(d_state_of(*make_mixer(kName, spec_of(512, 512, 8, false)), spec_of(512, 512, 8, false)), 128);
  EXPECT_EQ(d_state_of(*make_mixer(kName, spec_of(128, 128, 4, false)), spec_of(128, 128, 4, false)), 64);
  EXPECT_EQ(d_state_of(*make_mixer(kName, small_spec()), small_spec()), 8);
  EXPECT_EQ(d_state_of(*make_mixer(kName, spec_of(4, 4, 4, false)), spec_of(4, 4, 4, false)), 2);
}

TEST(Mamba2, ExplicitOptionsAreHonoured) {
  const auto s = small_spec();
  auto m = make_mixer(kName, s, {{"d_state", int64_t{5}}, {"d_conv", int64_t{2}}});
  EXPECT_EQ(weight(*m, "in_proj.weight").size(0), 2 * 32 + 2 * 5 + 4);
  EXPECT_EQ(weight(*m, "conv1d.weight").sizes(), (std::vector<int64_t>{32 + 10, 1, 2}));
  EXPECT_EQ(weight(*m, "conv1d_b.weight").sizes(), (std::vector<int64_t>{32 + 10, 1, 2}));
  EXPECT_EQ(weight(*m, "out_proj.weight").sizes(), (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(d_state_of(*make_mixer(kName, s, {{"d_state", int64_t{256}}}), s), 256);
  EXPECT_EQ(d_state_of(*make_mixer(kName, s, {{"d_state", int64_t{1}}}), s), 1);
}

TEST(Mamba2, RejectsBadOptions) {
  EXPECT_THROW(make_mixer(kName, small_spec(), {{"chunk", int64_t{0}}}), lra::Error);
  EXPECT_THROW(make_mixer(kName, small_spec(), {{"d_conv", int64_t{0}}}), lra::Error);
  EXPECT_THROW(make_mixer(kName, small_spec(), {{"d_state", int64_t{-1}}}), lra::Error);
  EXPECT_THROW(make_mixer(kName, spec_of(32, 30, 4, false)), lra::Error);  // qkv 30 not divisible by 4 heads
  try {
    make_mixer(kName, small_spec(), {{"chunk", int64_t{0}}});
    ADD_FAILURE() << "chunk 0 accepted";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::rules);
    EXPECT_NE(std::string(e.what()).find("mamba2: chunk must be"), std::string::npos) << e.what();
  }
}

TEST(Mamba2, Float32GradientsMatchFloat64) {
  auto x = random_input(4, 65, 128);
  auto mask = lengths_mask(65, {65, 40, 30, 21});
  for (const bool causal : {false, true})
    EXPECT_TRUE(float32_gradients_match_float64(*make_mixer(kName, small_spec(128, 4, 128, causal)), x, mask))
        << (causal ? "causal" : "bidirectional");
}
