// performer — FAVOR+ kernel attention (Choromanski, Likhosherstov, Dohan, Song,
// Gane, Sarlos, Hawkins, Davis, Mohiuddin, Kaiser, Belanger, Colwell, Weller,
// 2021, "Rethinking Attention with Performers", ICLR).
//
// softmax kernel: exp(q.k / sqrt(d)) = E_w[phi(q) phi(k)] with positive random
// features phi(x) = exp(w^T x' - |x'|^2 / 2) / sqrt(m), x' = x d^(-1/4), and
// w the rows of an [m, d] Gaussian orthogonal random matrix. Attention becomes
//   out_i = phi(q_i)^T sum_j phi(k_j) v_j^T / phi(q_i)^T sum_j phi(k_j),
// O(L m) time and memory. relu kernel: phi(x) = relu(w^T x) + 1e-3 (LRA's
// "generalized attention"; with nb_features = 0, phi(x) = relu(x) + 1e-3).
//
// Numerics: phi is computed as exp(log-feature - c) where c is a max that is the
// same for every key a query sees (and, for queries, a per-row max), so it
// cancels exactly in the normalised ratio but keeps exp() <= 1. Other constant
// factors (1/sqrt(m); |q'|^2/2 for a query) cancel the same way and are left out.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <lra/attention.h>
#include <lra/mixer.h>

namespace {

enum class Kernel { softmax, relu };

constexpr double kReluEpsilon = 1e-3;      // LRA's kernel_epsilon for ReLU features
constexpr double kMinDenominator = 1e-30;  // all weights are >= 0, so |num| <= den * max|v| stays bounded
// Stabilised exponents are <= 0; they are floored at -25 before exp(). Without
// the floor, exp() of a long tail of very negative logits yields float32
// denormals, which made CPU training several times slower. The floor changes a feature
// by at most e^-25 ~ 1.4e-11 relative to the largest one (LRA instead adds
// 1e-6 to every feature).
constexpr double kLogFloor = -25.0;

// exp(x) for stabilised x <= 0, never below e^kLogFloor.
at::Tensor floored_exp(const at::Tensor& x) { return at::exp(x.clamp_min(kLogFloor)); }

struct Config {
  Kernel kernel = Kernel::softmax;
  int64_t nb_features = 256;  // m; for relu, 0 = deterministic features (no projection)
  int64_t redraw = 0;         // training forwards between feature redraws; 0 = fixed features
  int64_t chunk = 64;         // causal prefix sums: chunk length
  bool mask_keys = true;      // false: no padding mask at all (LRA)
};

// ---------------------------------------------------------------- random features

// splitmix64 finaliser: one well-mixed 64-bit seed from (seed, layer, draw).
uint64_t mix_seed(uint64_t seed, uint64_t layer, uint64_t draw) {
  uint64_t z = seed ^ (layer * 0x9E3779B97F4A7C15ull) ^ (draw * 0xD1B54A32D192ED03ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// [m, d] Gaussian orthogonal random matrix: stacked blocks of d orthonormal rows
// (QR of a Gaussian matrix, sign-corrected to be Haar distributed), each row then
// scaled by the norm of an independent Gaussian d-vector so every row is
// marginally N(0, I) — the unbiased FAVOR+ estimator (LRA's ortho_scaling = 0).
at::Tensor orthogonal_gaussian(int64_t m, int64_t d, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto opts = at::TensorOptions().dtype(at::kDouble);
  std::vector<at::Tensor> blocks;
  for (int64_t row = 0; row < m; row += d) {
    auto qr = at::linalg_qr(at::randn({d, d}, gen, opts));
    auto q = std::get<0>(qr) * at::sign(std::get<1>(qr).diagonal()).unsqueeze(0);
    blocks.push_back(q.t().narrow(0, 0, std::min(d, m - row)));
  }
  auto norms = at::randn({m, d}, gen, opts).norm(2, {1}, /*keepdim=*/true);
  return (at::cat(blocks, 0) * norms).to(at::kFloat);
}

// ---------------------------------------------------------------- feature maps

// x' = x d^(-1/4), so that exp(q'.k') = exp(q.k / sqrt(d)).
at::Tensor scaled(const at::Tensor& x) { return x * std::pow(static_cast<double>(x.size(-1)), -0.25); }

// Query features exp(w^T q' - |q'|^2/2) / sqrt(m) up to per-query constant
// factors, which cancel in the ratio: |q'|^2/2, 1/sqrt(m) and the row max used
// as stabiliser. What remains is exp(w^T q' - max_f w^T q').
at::Tensor softmax_query_features(const at::Tensor& q, const at::Tensor& w) {
  auto proj = at::matmul(scaled(q), w.t());
  return floored_exp(proj - proj.amax(-1, /*keepdim=*/true).detach());
}

// Key features and their stabiliser. `real` [B, 1, L, 1] marks real keys and
// `keep` is the same as 0/1. Returns fk [B, H, L, F] (zero on padded keys),
// stabilised by exp(-max); the max cancels exactly in the ratio, so it takes no
// gradient. Bidirectional: one max over all real keys. Causal: fk_j carries
// exp(-r_j) with r_j [B, H, L] the running max over keys <= j (never looks ahead).
struct KeyFeatures {
  at::Tensor fk, r;
};

KeyFeatures softmax_key_features(const at::Tensor& k, const at::Tensor& w, const at::Tensor& real,
                                 const at::Tensor& keep, bool causal) {
  auto ks = scaled(k);
  // Padded keys get log-features near -1e10 so they never move the max.
  auto half_norm = (0.5 * ks.pow(2).sum(-1, /*keepdim=*/true)).masked_fill(real.logical_not(), -lra::ops::kMaskedLogit);
  auto lk = at::matmul(ks, w.t()) - half_norm;  // log of the unnormalised features
  if (!causal) return {floored_exp(lk - lk.amax({2, 3}, /*keepdim=*/true).detach()) * keep, {}};
  auto r = std::get<0>(at::cummax(lk.amax(-1).detach(), 2));  // [B, H, L], non-decreasing
  return {floored_exp(lk - r.unsqueeze(-1)) * keep, r};
}

at::Tensor relu_features(const at::Tensor& x, const at::Tensor& w) {
  return at::relu(w.defined() ? at::matmul(x, w.t()) : x) + kReluEpsilon;
}

// ---------------------------------------------------------------- attention
//
// Both paths multiply by [V, 1] instead of V: the extra column carries the
// normaliser phi(q)^T sum phi(k) through the same matmuls.

at::Tensor with_ones_column(const at::Tensor& v) { return at::cat({v, at::ones_like(v.narrow(-1, 0, 1))}, -1); }

at::Tensor normalise(const at::Tensor& num_den) {
  const int64_t dv = num_den.size(-1) - 1;
  return num_den.narrow(-1, 0, dv) / num_den.narrow(-1, dv, 1).clamp_min(kMinDenominator);
}

// Every key visible: K'^T [V, 1] once, O(L F Dv).
at::Tensor bidirectional(const at::Tensor& fq, const at::Tensor& fk, const at::Tensor& v) {
  return normalise(at::matmul(fq, at::matmul(fk.transpose(-2, -1), with_ones_column(v))));
}

// Pads dimension 2 of [B, H, L, *] up to `len`: zeros, or a copy of the last entry.
at::Tensor pad_seq(const at::Tensor& x, int64_t len, bool replicate = false) {
  const int64_t extra = len - x.size(2);
  if (extra == 0) return x;
  if (!replicate) {
    std::vector<int64_t> pad(2 * (x.dim() - 2), 0);
    pad.back() = extra;
    return at::constant_pad_nd(x, pad);
  }
  auto last = x.narrow(2, x.size(2) - 1, 1);
  auto shape = last.sizes().vec();
  shape[2] = extra;
  return at::cat({x, last.expand(shape)}, 2);
}

// Causal prefix sums, one chunk of C positions at a time. Key j carries
// exp(-r_j) and query i needs every key at the common scale exp(-r_i); since r
// is non-decreasing every correction factor exp(r_j - r_i) is <= 1 (no overflow).
// The running state S = sum K'^T [V, 1] of earlier chunks is kept at the scale
// of the last key folded in. Memory O(L C + (L / C) F Dv); no L x L tensor.
at::Tensor causal(const at::Tensor& fq, const at::Tensor& fk, const at::Tensor& r, const at::Tensor& v,
                  int64_t chunk) {
  const int64_t L = fq.size(2), C = std::min(chunk, L), N = (L + C - 1) / C;
  auto q_all = pad_seq(fq, N * C), k_all = pad_seq(fk, N * C), v_all = pad_seq(with_ones_column(v), N * C);
  auto r_all = pad_seq(r, N * C, /*replicate=*/true);
  std::vector<at::Tensor> outs;
  at::Tensor state, scale;  // state [B, H, F, Dv + 1] kept at r = scale [B, H]
  for (int64_t n = 0; n < N; ++n) {
    auto q = q_all.narrow(2, n * C, C), k = k_all.narrow(2, n * C, C), vc = v_all.narrow(2, n * C, C);
    auto rc = r_all.narrow(2, n * C, C);  // [B, H, C]
    // Inside the chunk: explicit C x C weights for j <= i, rescaled by exp(r_j - r_i).
    auto rescale = floored_exp((rc.unsqueeze(-2) - rc.unsqueeze(-1)).clamp_max(0.0)).tril();
    auto num_den = at::matmul(at::matmul(q, k.transpose(-2, -1)) * rescale, vc);
    if (n > 0) {  // earlier chunks, moved from `scale` to each query's r_i
      auto to_query = floored_exp(scale.unsqueeze(-1) - rc).unsqueeze(-1);  // [B, H, C, 1]
      num_den = num_den + at::matmul(q, state) * to_query;
    }
    outs.push_back(normalise(num_den));
    // Fold this chunk into the state at the scale of its last position.
    auto next = rc.select(2, C - 1);
    auto kd = k * floored_exp(rc - next.unsqueeze(-1)).unsqueeze(-1);
    auto kv = at::matmul(kd.transpose(-2, -1), vc);
    if (n == 0) {
      state = kv;
    } else {
      auto decay = floored_exp(scale - next).unsqueeze(-1).unsqueeze(-1);  // <= 1
      state = state * decay + kv;
    }
    scale = next;
  }
  return at::cat(outs, 2).narrow(2, 0, L);
}

// ---------------------------------------------------------------- the mixer

class Performer final : public lra::Mixer {
 public:
  Performer(const lra::MixerSpec& spec, const Config& cfg)
      : heads_(spec.heads), head_dim_(spec.qkv_dim / spec.heads), causal_(spec.causal), cfg_(cfg),
        seed_(spec.seed), layer_(static_cast<uint64_t>(spec.layer_index)),
        proj_(register_module("proj", lra::QKVO(spec.d_model, spec.qkv_dim))) {
    // A buffer, not a parameter: moves with the module, takes no gradient, costs no budget.
    if (cfg_.nb_features > 0) features_ = register_buffer("features", draw(0));
  }

  // spec.attention_dropout is not applied: there is no attention matrix to drop
  // from (LRA's Performer ignores it as well).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& given_mask) override {
    // mask_keys = false: LRA's fast attention applies no mask, padded keys count.
    const at::Tensor mask = cfg_.mask_keys ? given_mask : at::Tensor();
    maybe_redraw();
    // With redraws on, compute from a copy: a later redraw must not modify a
    // tensor that an earlier forward saved for its backward.
    const auto w = cfg_.redraw > 0 && features_.defined() ? features_.clone() : features_;
    auto q = lra::ops::split_heads(proj_->q(x), heads_);
    auto k = lra::ops::split_heads(proj_->k(x), heads_);
    auto v = lra::ops::split_heads(proj_->v(x), heads_);
    auto real = (mask.defined() ? mask : at::ones({x.size(0), x.size(1)}, x.options().dtype(at::kBool)))
                    .unsqueeze(1).unsqueeze(-1);  // [B, 1, L, 1]
    auto keep = real.to(q.scalar_type());
    at::Tensor fq, fk, r;
    if (cfg_.kernel == Kernel::softmax) {
      fq = softmax_query_features(q, w);
      auto key = softmax_key_features(k, w, real, keep, causal_);
      fk = key.fk;
      r = key.r;
    } else {  // bounded features: no stabiliser needed (r = 0)
      fq = relu_features(q, w);
      fk = relu_features(k, w) * keep;
      if (causal_) r = at::zeros({k.size(0), k.size(1), k.size(2)}, k.options());
    }
    auto out = causal_ ? causal(fq, fk, r, v, cfg_.chunk) : bidirectional(fq, fk, v);
    return proj_->o(lra::ops::merge_heads(out));
  }

 private:
  at::Tensor draw(uint64_t index) const {
    return orthogonal_gaussian(cfg_.nb_features, head_dim_, mix_seed(seed_, layer_, index));
  }

  // With redraw = N > 0, every N-th training forward draws fresh features
  // (deterministically from seed, layer and draw count); eval never redraws.
  void maybe_redraw() {
    if (!is_training() || cfg_.redraw <= 0 || !features_.defined()) return;
    const uint64_t call = training_calls_++;
    if (call == 0 || call % static_cast<uint64_t>(cfg_.redraw) != 0) return;
    torch::NoGradGuard no_grad;
    features_.copy_(draw(++draws_));
  }

  int64_t heads_, head_dim_;
  bool causal_;
  Config cfg_;
  uint64_t seed_, layer_;
  uint64_t training_calls_ = 0, draws_ = 0;
  lra::QKVO proj_;
  at::Tensor features_;  // [m, head_dim], shared by all heads (as in LRA)
};

std::vector<lra::OptionSpec> options() {
  return {
      {"kernel", std::string("softmax"), "softmax (FAVOR+ positive random features) | relu (generalized attention)"},
      {"nb_features", int64_t{256},
       "random features m (LRA's ListOps config used 2); relu only: 0 = deterministic relu(x) features"},
      {"redraw", int64_t{0}, "redraw the random features every N training forwards; 0 = fixed features"},
      {"chunk", int64_t{64}, "causal mode only: chunk length of the prefix sums (memory/speed, not results)"},
      {"mask_keys", true,
       "padded keys get zero features; false reproduces LRA, which applies no mask (padding and, under the "
       "zero-pixel mask, black pixels stay keys; it fails the padding_mask conformance check)"},
  };
}

[[noreturn]] void bad_option(const std::string& what) {
  throw lra::Error(lra::ErrorKind::rules, "performer: " + what);
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& o) {
  Config cfg;
  const std::string kernel = o.get_string("kernel");
  if (kernel == "softmax") cfg.kernel = Kernel::softmax;
  else if (kernel == "relu") cfg.kernel = Kernel::relu;
  else bad_option("kernel must be softmax or relu, got '" + kernel + "'");
  cfg.nb_features = o.get_int("nb_features");
  cfg.redraw = o.get_int("redraw");
  cfg.chunk = o.get_int("chunk");
  cfg.mask_keys = o.get_bool("mask_keys");
  if (cfg.nb_features < (cfg.kernel == Kernel::softmax ? 1 : 0))
    bad_option("nb_features must be >= 1 for the softmax kernel (>= 0 for relu)");
  if (cfg.redraw < 0) bad_option("redraw must be >= 0");
  if (cfg.chunk < 1) bad_option("chunk must be >= 1");
  return std::make_shared<Performer>(spec, cfg);
}

}  // namespace

LRA_MIXER_PLUGIN("performer", "1.1.0",
                 "Performer FAVOR+ attention (Choromanski et al. 2021): orthogonal positive random features, O(L m)",
                 LRA_CAP_CAUSAL | LRA_CAP_PADDING_MASK, options, create)
