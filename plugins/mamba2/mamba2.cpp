// mamba2 — the selective state-space layer of Mamba-2 (Dao & Gu, 2024,
// "Transformers are SSMs: Generalized Models and Efficient Algorithms Through
// Structured State Space Duality"), computed with the chunked SSD algorithm in
// matrix-multiply form.
//
// Per head h (state h_t is [P, N], A_h < 0 a scalar, B_t/C_t shared by all heads):
//   h_t = exp(dt_t A_h) h_{t-1} + dt_t x_t B_t^T,      y_t = h_t C_t + D_h x_t
// The host owns the block's norm and residual; this is the mixer inside it:
//   in_proj -> (z, xBC, dt) ; xBC -> causal depthwise conv -> SiLU -> (x, B, C)
//   dt = softplus(dt + dt_bias) ; SSD scan ; y = rmsnorm(y * silu(z)) * w ; out_proj
//
// Bidirectional (not spec.causal): a second scan over the reversed sequence with
// its own conv1d, A_log, dt_bias and D (Vision Mamba's arrangement), summed with
// the forward scan before the gated norm.
//
// Padding: xBC is zeroed at masked positions before the conv and dt is zeroed
// there after the softplus, so a masked step neither decays nor writes the state.
//
// Decoding (causal only): the recurrence above one token at a time, with state
// {last K-1 inputs of the conv [B, K-1, E+2N], SSM state [B, H, P, N]}.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <lra/mixer.h>

namespace {

constexpr double kNormEps = 1e-5;  // Mamba-2's RMSNormGated eps

[[noreturn]] void reject(const std::string& what) { throw lra::Error(lra::ErrorKind::rules, "mamba2: " + what); }

// Segment sums of a: [..., T] -> [..., T, T] with
//   out[..., i, j] = a_{j+1} + ... + a_i   (i >= j; 0 on the diagonal),   -inf for j > i.
// Built by a cumulative sum down the rows of a strictly-lower-triangular copy of
// a, so no difference of two long prefix sums is ever taken.
at::Tensor segment_sums(const at::Tensor& a) {
  const int64_t T = a.size(-1);
  auto bool_opts = a.options().dtype(at::kBool);
  auto lower = at::ones({T, T}, bool_opts).tril();
  auto strictly_lower = at::ones({T, T}, bool_opts).tril(-1);
  std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end());
  shape.push_back(T);
  auto rows = a.unsqueeze(-1).expand(shape);  // rows[..., i, j] = a_i
  auto sums = at::cumsum(rows.masked_fill(strictly_lower.logical_not(), 0.0), -2);
  return sums.masked_fill(lower.logical_not(), -std::numeric_limits<double>::infinity());
}

// The SSD scan without the D skip term, chunk by chunk in matrix-multiply form.
//   x [B, L, H, P], dt [B, L, H] (already softplus'd and masked), A [H] (< 0),
//   Bm, Cm [B, L, N]  ->  y [B, L, H, P]
at::Tensor ssd_chunked(const at::Tensor& x, const at::Tensor& dt, const at::Tensor& A, const at::Tensor& Bm,
                       const at::Tensor& Cm, int64_t chunk) {
  const int64_t Bsz = x.size(0), L = x.size(1), H = x.size(2), P = x.size(3), N = Bm.size(-1);
  if (L == 0) return at::zeros_like(x);
  // As many chunks as `chunk` asks for, of equal length: L = 65 with chunk 64
  // becomes 2 chunks of 33 (1 padded step), not 2 of 64 (63 padded).
  const int64_t nc = (L + chunk - 1) / chunk, Q = (L + nc - 1) / nc, T = nc * Q, extra = T - L;

  auto xdt = x * dt.unsqueeze(-1);  // dt_t x_t: what step t writes (with B_t)
  auto a = dt * A;                  // dt_t A_h: log of step t's decay, <= 0
  auto Bp = Bm, Cp = Cm;
  if (extra > 0) {  // internal padding: x = 0 and dt*A = 0, cut back at the end
    xdt = at::constant_pad_nd(xdt, {0, 0, 0, 0, 0, extra});
    a = at::constant_pad_nd(a, {0, 0, 0, extra});
    Bp = at::constant_pad_nd(Bp, {0, 0, 0, extra});
    Cp = at::constant_pad_nd(Cp, {0, 0, 0, extra});
  }
  auto X = xdt.reshape({Bsz, nc, Q, H, P}).permute({0, 3, 1, 2, 4});  // [B, H, c, Q, P]
  auto Ac = a.reshape({Bsz, nc, Q, H}).permute({0, 3, 1, 2});         // [B, H, c, Q]
  auto Bc = Bp.reshape({Bsz, 1, nc, Q, N});                           // [B, 1, c, Q, N]
  auto Cc = Cp.reshape({Bsz, 1, nc, Q, N});

  // (1) Inside each chunk: the "attention-like" form (C B^T ∘ Lmask) X, where
  //     Lmask[i, j] = exp(a_{j+1} + ... + a_i) for j <= i and 0 above the diagonal.
  auto decay = at::exp(segment_sums(Ac));                    // [B, H, c, Q, Q]
  auto scores = at::matmul(Cc, Bc.transpose(-1, -2));        // [B, 1, c, Q, Q] (shared by heads)
  auto y = at::matmul(scores * decay, X);                    // [B, H, c, Q, P]

  // (2) State at each chunk's end from its own inputs: sum_j exp(a_{j+1..Q-1}) x_j B_j^T.
  //     The decay to the chunk's end is the last row of the segment-sum matrix.
  auto to_end = decay.select(-2, Q - 1).unsqueeze(-1);                  // [B, H, c, Q, 1]
  auto states = at::matmul((X * to_end).transpose(-1, -2), Bc);          // [B, H, c, P, N]

  // (3) Across chunks: the state entering chunk c is
  //     sum_{c' < c} exp(total decay of chunks c'+1 .. c-1) states[c'].
  //     A zero initial state is prepended; segment sums over chunk totals give the decays.
  auto chunk_log_decay = at::constant_pad_nd(Ac.sum(-1), {1, 0});                    // [B, H, c+1]
  auto across = at::exp(segment_sums(chunk_log_decay)).narrow(-2, 0, nc);           // [B, H, c, c+1]
  auto states0 = at::constant_pad_nd(states, {0, 0, 0, 0, 1, 0}).reshape({Bsz, H, nc + 1, P * N});
  auto entering = at::matmul(across, states0).reshape({Bsz, H, nc, P, N});          // [B, H, c, P, N]

  // (4) Entering state to outputs: C_i h_in decayed by exp(a_0 + ... + a_i).
  auto from_start = at::exp(at::cumsum(Ac, -1)).unsqueeze(-1);                       // [B, H, c, Q, 1]
  y = y + at::matmul(Cc, entering.transpose(-1, -2)) * from_start;                  // [B, H, c, Q, P]

  return y.permute({0, 2, 3, 1, 4}).reshape({Bsz, T, H, P}).narrow(1, 0, L);
}

// Mamba-2's RMSNormGated with norm_before_gate = False and one group:
// rmsnorm(y * silu(z)) * weight.
class GatedRMSNormImpl : public torch::nn::Module {
 public:
  explicit GatedRMSNormImpl(int64_t width) : weight(register_parameter("weight", torch::ones({width}))) {}
  at::Tensor forward(const at::Tensor& y, const at::Tensor& z) {
    auto g = y * at::silu(z);
    return g * at::rsqrt(g.pow(2).mean(-1, /*keepdim=*/true) + kNormEps) * weight;
  }
  at::Tensor weight;
};

// One scan direction's own parameters.
struct Direction {
  torch::nn::Conv1d conv{nullptr};
  at::Tensor A_log, dt_bias, D;
};

class Mamba2 final : public lra::Mixer {
 public:
  Mamba2(const lra::MixerSpec& spec, int64_t d_state, int64_t d_conv, int64_t chunk)
      : causal_(spec.causal),
        E_(spec.qkv_dim),
        H_(spec.heads),
        P_(spec.qkv_dim / spec.heads),
        N_(d_state),
        K_(d_conv),
        chunk_(chunk) {
    // Registration order = the order of draws from the global generator (as Mamba-2's __init__).
    in_proj_ = register_module(
        "in_proj", torch::nn::Linear(torch::nn::LinearOptions(spec.d_model, 2 * E_ + 2 * N_ + H_).bias(false)));
    fwd_ = make_direction("");
    if (!causal_) bwd_ = make_direction("_b");
    norm_ = register_module("norm", std::make_shared<GatedRMSNormImpl>(E_));
    out_proj_ =
        register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(E_, spec.d_model).bias(false)));
  }

  // As the official Mamba-2 trains them: no weight decay on A_log, dt_bias
  // and D (`_no_weight_decay = True` in mamba_ssm/modules/mamba2.py, commit
  // 03a38fb, Mamba2.__init__), in each direction.
  std::vector<lra::ParamHint> optimizer_hints() const override {
    std::vector<lra::ParamHint> hints;
    for (const std::string suffix : {std::string(""), std::string("_b")}) {
      if (suffix == "_b" && causal_) continue;
      for (const char* name : {"A_log", "dt_bias", "D"}) {
        lra::ParamHint h;
        h.name = name + suffix;
        h.no_weight_decay = true;
        hints.push_back(h);
      }
    }
    return hints;
  }

  // spec.attention_dropout is not used: no attention probabilities exist.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    auto zxbcdt = in_proj_->forward(x);
    auto z = zxbcdt.narrow(-1, 0, E_);
    auto xBC = zxbcdt.narrow(-1, E_, E_ + 2 * N_);
    auto dt_raw = zxbcdt.narrow(-1, 2 * E_ + 2 * N_, H_);
    at::Tensor keep;  // [B, L, 1], 1 = real
    if (mask.defined()) {
      keep = mask.to(x.scalar_type()).unsqueeze(-1);
      xBC = xBC * keep;  // the conv never reads a masked input
    }
    auto y = scan(fwd_, xBC, dt_raw, keep);
    if (!causal_) {
      auto flip = [](const at::Tensor& t) { return t.defined() ? t.flip({1}) : t; };
      y = y + flip(scan(bwd_, flip(xBC), flip(dt_raw), flip(keep)));
    }
    return out_proj_->forward(norm_->forward(y, z));
  }

  // The bidirectional layer's reversed scan reads the future: only causal decodes.
  bool decodes() const override { return causal_; }
  std::vector<torch::Tensor> decode_start(int64_t batch, const torch::TensorOptions& options) override {
    return {at::zeros({batch, K_ - 1, E_ + 2 * N_}, options), at::zeros({batch, H_, P_, N_}, options)};
  }
  // forward's scan at one position: the conv over the kept inputs and this one,
  // then h = exp(dt A) h + dt x B^T, y = h C + D x.
  torch::Tensor decode_step(const torch::Tensor& x_t, std::vector<torch::Tensor>& state,
                            int64_t /*position*/) override {
    TORCH_CHECK(state.size() == 2, "mamba2: the decoding state is {conv inputs, SSM state}");
    const int64_t Bsz = x_t.size(0);
    auto zxbcdt = in_proj_->forward(x_t);
    auto z = zxbcdt.narrow(-1, 0, E_);
    auto xBC = zxbcdt.narrow(-1, E_, E_ + 2 * N_);
    auto dt_raw = zxbcdt.narrow(-1, 2 * E_ + 2 * N_, H_);
    auto window = at::cat({state[0], xBC.unsqueeze(1)}, 1);  // [B, K, C], oldest first
    auto w = fwd_.conv->weight.squeeze(1);                     // [C, K]
    auto conv = fwd_.conv->bias + window.select(1, 0) * w.select(1, 0);  // forward's order of adds
    for (int64_t k = 1; k < K_; ++k) conv = conv + window.select(1, k) * w.select(1, k);
    state[0] = window.narrow(1, 1, K_ - 1).contiguous();  // own storage: its bytes are what is counted
    auto u = at::silu(conv);
    auto xs = u.narrow(-1, 0, E_).reshape({Bsz, H_, P_});
    auto Bm = u.narrow(-1, E_, N_);
    auto Cm = u.narrow(-1, E_ + N_, N_);
    auto dt = at::softplus(dt_raw + fwd_.dt_bias);  // [B, H]
    auto A = -at::exp(fwd_.A_log);
    auto decay = at::exp(dt * A).view({Bsz, H_, 1, 1});
    auto write = (xs * dt.unsqueeze(-1)).unsqueeze(-1) * Bm.view({Bsz, 1, 1, N_});  // dt x B^T
    state[1] = decay * state[1] + write;
    auto y = at::matmul(state[1], Cm.view({Bsz, 1, N_, 1})).squeeze(-1) + xs * fwd_.D.view({H_, 1});
    return out_proj_->forward(norm_->forward(y.reshape({Bsz, E_}), z));
  }
  // The state after a prompt in one pass: the conv keeps its last K-1 inputs,
  // and the SSM state is sum_j exp(a_{j+1} + ... + a_{L-1}) dt_j x_j B_j^T.
  bool prefills_in_parallel() const override { return true; }
  torch::Tensor prefill(const torch::Tensor& x, std::vector<torch::Tensor>& state) override {
    TORCH_CHECK(state.size() == 2, "mamba2: the decoding state is {conv inputs, SSM state}");
    const int64_t Bsz = x.size(0), L = x.size(1);
    if (L == 0) return x.new_zeros(x.sizes());
    auto zxbcdt = in_proj_->forward(x);
    auto xBC = zxbcdt.narrow(-1, E_, E_ + 2 * N_);
    auto dt_raw = zxbcdt.narrow(-1, 2 * E_ + 2 * N_, H_);
    auto padded = at::constant_pad_nd(xBC, {0, 0, K_ - 1, 0});  // zeros before the prompt, as decode_start's
    state[0] = padded.narrow(1, L, K_ - 1).contiguous();
    auto w = fwd_.conv->weight.squeeze(1);
    auto conv = fwd_.conv->bias + padded.narrow(1, 0, L) * w.select(1, 0);
    for (int64_t k = 1; k < K_; ++k) conv = conv + padded.narrow(1, k, L) * w.select(1, k);
    auto u = at::silu(conv);
    auto xs = u.narrow(-1, 0, E_).reshape({Bsz, L, H_, P_});
    auto Bm = u.narrow(-1, E_, N_);
    auto dt = at::softplus(dt_raw + fwd_.dt_bias);                  // [B, L, H]
    auto cum = at::cumsum(dt * -at::exp(fwd_.A_log), 1);            // log decay up to each step
    auto to_end = at::exp(cum.narrow(1, L - 1, 1) - cum);           // decay from each step to the last
    auto written = xs * (dt * to_end).unsqueeze(-1);                // [B, L, H, P]
    state[1] = state[1] + at::einsum("blhp,bln->bhpn", {written, Bm});
    return forward(x, {});
  }

 private:
  Direction make_direction(const std::string& suffix) {
    Direction d;
    const int64_t channels = E_ + 2 * N_;
    d.conv = register_module("conv1d" + suffix,
                             torch::nn::Conv1d(torch::nn::Conv1dOptions(channels, channels, K_)
                                                   .groups(channels)
                                                   .padding(K_ - 1)
                                                   .bias(true)));
    torch::NoGradGuard no_grad;
    // dt ~ exp(U(log 0.001, log 0.1)), clamped >= 1e-4; dt_bias = softplus^{-1}(dt).
    const double lo = std::log(0.001), hi = std::log(0.1);
    auto dt = at::exp(torch::rand({H_}) * (hi - lo) + lo).clamp_min(1e-4);
    d.dt_bias = register_parameter("dt_bias" + suffix, dt + at::log(-at::expm1(-dt)));
    // A = -exp(A_log), A_log = log(U(1, 16)).
    d.A_log = register_parameter("A_log" + suffix, torch::empty({H_}).uniform_(1.0, 16.0).log());
    d.D = register_parameter("D" + suffix, torch::ones({H_}));
    return d;
  }

  // One direction over an already ordered (possibly flipped) sequence. xBC [B, L, E+2N]
  // is zero at masked positions; keep [B, L, 1] or undefined. Returns [B, L, E].
  at::Tensor scan(Direction& d, const at::Tensor& xBC, const at::Tensor& dt_raw, const at::Tensor& keep) {
    const int64_t Bsz = xBC.size(0), L = xBC.size(1);
    // Causal depthwise conv, out_t = bias + sum_k w_k x_{t-K+1+k}, as K shifted
    // multiply-adds in the [B, L, C] layout (LibTorch's grouped conv1d on CPU
    // was the slowest op of the layer); the weights stay an nn::Conv1d's.
    auto padded = at::constant_pad_nd(xBC, {0, 0, K_ - 1, 0});
    auto w = d.conv->weight.squeeze(1);  // [C, K]
    auto conv = d.conv->bias + padded.narrow(1, 0, L) * w.select(1, 0);
    for (int64_t k = 1; k < K_; ++k) conv = conv + padded.narrow(1, k, L) * w.select(1, k);
    auto u = at::silu(conv);
    auto xs = u.narrow(-1, 0, E_).reshape({Bsz, L, H_, P_});
    auto Bm = u.narrow(-1, E_, N_);
    auto Cm = u.narrow(-1, E_ + N_, N_);
    auto dt = at::softplus(dt_raw + d.dt_bias);
    if (keep.defined()) dt = dt * keep;  // masked step: no decay, no write
    auto A = -at::exp(d.A_log);
    auto y = ssd_chunked(xs, dt, A, Bm, Cm, chunk_) + xs * d.D.view({H_, 1});
    return y.reshape({Bsz, L, E_});
  }

  bool causal_;
  int64_t E_, H_, P_, N_, K_, chunk_;
  torch::nn::Linear in_proj_{nullptr}, out_proj_{nullptr};
  std::shared_ptr<GatedRMSNormImpl> norm_;
  Direction fwd_, bwd_;
};

// Parameters of one layer (dirs = 1 causal, 2 bidirectional).
int64_t parameter_count(int64_t d_model, int64_t E, int64_t H, int64_t N, int64_t K, int64_t dirs) {
  return d_model * (2 * E + 2 * N + H)        // in_proj
         + dirs * ((K + 1) * (E + 2 * N)      // conv1d weight + bias
                   + 3 * H)                   // A_log, dt_bias, D
         + E                                  // norm weight
         + E * d_model;                       // out_proj
}

// Largest power of two N <= 128 whose layer fits 1.1 x the reference attention's
// 4 d_model qkv_dim parameters; 2 if none does.
int64_t auto_d_state(const lra::MixerSpec& s, int64_t K) {
  const int64_t dirs = s.causal ? 1 : 2;
  for (int64_t N = 128; N >= 2; N /= 2)
    if (10 * parameter_count(s.d_model, s.qkv_dim, s.heads, N, K, dirs) <= 44 * s.d_model * s.qkv_dim) return N;
  return 2;
}

std::vector<lra::OptionSpec> options() {
  return {
      {"d_state", int64_t{0},
       "SSM state size N; 0 = auto: largest power of two <= 128 keeping the layer within 1.1 x 4*d_model*qkv_dim "
       "parameters (2 if none)"},
      {"chunk", int64_t{64}, "chunk length Q of the SSD algorithm (memory/speed, not results)"},
      {"d_conv", int64_t{4}, "kernel width of the depthwise causal conv1d (Mamba-2: 4)"},
  };
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& o) {
  const int64_t d_state = o.get_int("d_state"), chunk = o.get_int("chunk"), d_conv = o.get_int("d_conv");
  if (spec.heads < 1) reject("heads must be >= 1, got " + std::to_string(spec.heads));
  if (spec.qkv_dim < 1) reject("qkv_dim must be >= 1, got " + std::to_string(spec.qkv_dim));
  if (spec.qkv_dim % spec.heads != 0)
    reject("qkv_dim (" + std::to_string(spec.qkv_dim) + ") must be divisible by heads (" +
           std::to_string(spec.heads) + ")");
  if (d_state < 0) reject("d_state must be >= 1 (or 0 = auto), got " + std::to_string(d_state));
  if (chunk < 1) reject("chunk must be >= 1, got " + std::to_string(chunk));
  if (d_conv < 1) reject("d_conv must be >= 1, got " + std::to_string(d_conv));
  const int64_t N = d_state == 0 ? auto_d_state(spec, d_conv) : d_state;
  return std::make_shared<Mamba2>(spec, N, d_conv, chunk);
}

}  // namespace

LRA_MIXER_PLUGIN("mamba2", "1.0.0",
                 "Mamba-2 selective SSM (Dao & Gu 2024), chunked SSD; causal scan, bidirectional = fwd + reversed",
                 LRA_CAP_CAUSAL | LRA_CAP_PADDING_MASK, options, create)
