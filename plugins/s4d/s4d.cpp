// s4d — the diagonal state-space layer (Gu, Gupta, Goel, Ré, 2022, "On the
// Parameterization and Initialization of Diagonal State Space Models").
//
// Per channel h (h = 1..d_model) a diagonal complex state of N/2 modes (their
// conjugates make N real states), continuous dynamics x' = A x + B u, y = C x,
// with B = 1, discretised by zero-order hold with a learned step Δ_h:
//   dA = exp(Δ A),  dB = (exp(Δ A) - 1) / A,
//   K[l] = 2 Re( sum_n C_n dB_n dA_n^l )            (a Vandermonde product)
//   y = GELU(K * u + D u),  out = GLU(W y + b)     (W: d_model -> 2 d_model)
// The kernel is applied by FFT convolution of length 2L, so nothing wraps
// around. Bidirectional (two kernels, as S4's LRA models): a second kernel K'
// reads the strict future, y[t] += sum_{s>t} K'[s-t-1] u[s].
// Padding: masked inputs are zeroed before the convolution, so they reach no
// real position in either direction.
// Decoding (causal only): the kernel is the impulse response of the
// recurrence h_t = dA h_{t-1} + dB u_t, y_t = 2 Re(C h_t), so a step keeps
// just h, [B, d_model, N/2] complex, whatever the context.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <lra/mixer.h>

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int64_t kMaxAutoState = 64;  // S4D's default d_state
constexpr double kBudgetRatio = 1.1;   // LRA's 10% parameter rule

enum class Init { lin, inv };

struct Config {
  int64_t d_state = 0;  // N (real states; N/2 complex modes); 0 = auto
  Init init = Init::lin;
  bool bidirectional = true;
  double dt_min = 0.001, dt_max = 0.1;
};

// Parameters of one layer: log_dt, A (real and imaginary parts), C per
// direction, D, and the GLU output projection.
int64_t layer_parameters(int64_t H, int64_t N, int64_t directions) {
  return H + H * N + directions * H * N + H + (2 * H * H + 2 * H);
}

// Auto state size: the largest power of two <= 64 whose layer spends at most
// 1.1x the parameters of the attention it replaces (4 d_model qkv_dim), so
// every layer, and with it the whole model, stays inside LRA's 10% rule; 2 if
// even that is too many (the GLU alone can exceed it on tiny widths).
int64_t auto_state(const lra::MixerSpec& spec, int64_t directions) {
  const double cap = kBudgetRatio * 4.0 * static_cast<double>(spec.d_model * spec.qkv_dim);
  for (int64_t n = kMaxAutoState; n >= 2; n /= 2)
    if (static_cast<double>(layer_parameters(spec.d_model, n, directions)) <= cap) return n;
  return 2;
}

class S4D final : public lra::Mixer {
 public:
  S4D(const lra::MixerSpec& spec, const Config& c)
      : causal_(spec.causal),
        directions_(c.bidirectional && !spec.causal ? 2 : 1),
        state_(c.d_state > 0 ? c.d_state : auto_state(spec, directions_)) {
    const int64_t H = spec.d_model, M = state_ / 2;
    torch::NoGradGuard g;
    // Δ log-uniform in [dt_min, dt_max] (S4D, §4).
    log_dt_ = register_parameter(
        "log_dt", at::rand({H}) * (std::log(c.dt_max) - std::log(c.dt_min)) + std::log(c.dt_min));
    // Re A = -1/2 (stored as log 1/2 so it stays negative); Im A: S4D-Lin pi n
    // or S4D-Inv (N/pi) (N/(2n+1) - 1).
    log_a_real_ = register_parameter("log_A_real", at::full({H, M}, std::log(0.5)));
    auto n = at::arange(M, at::kDouble);
    auto imag = c.init == Init::lin ? kPi * n : (state_ / kPi) * (state_ / (2 * n + 1) - 1);
    a_imag_ = register_parameter("A_imag", imag.to(at::kFloat).unsqueeze(0).repeat({H, 1}));
    // C ~ complex standard normal (variance 1/2 per part), one per direction.
    c_ = register_parameter("C", at::randn({directions_, H, M, 2}) * std::sqrt(0.5));
    d_ = register_parameter("D", at::randn({H}));
    out_ = register_module("output_linear", torch::nn::Linear(H, 2 * H));
  }

  // As the official S4D trains them: log_dt, log_A_real and A_imag without
  // weight decay and with the learning rate's peak at most 1e-3
  // (models/s4/s4d.py, S4DKernel.register: {"weight_decay": 0.0, "lr": lr};
  // example.py passes lr=min(0.001, args.lr); state-spaces/s4 commit 2ed46fc).
  // C, D and the output projection follow the manifest, as there.
  std::vector<lra::ParamHint> optimizer_hints() const override {
    std::vector<lra::ParamHint> hints;
    for (const char* name : {"log_dt", "log_A_real", "A_imag"}) {
      lra::ParamHint h;
      h.name = name;
      h.no_weight_decay = true;
      h.lr_max = 1e-3;
      hints.push_back(h);
    }
    return hints;
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    const int64_t L = x.size(1);
    auto u = mask.defined() ? x * mask.to(x.scalar_type()).unsqueeze(-1) : x;
    u = u.transpose(1, 2).contiguous();  // [B, H, L]
    auto k = kernels(L);  // [directions, H, L]
    // One kernel of length 2L: the causal part at lags 0..L-1, the reverse
    // kernel at the top (lag -1 at index 2L-1, ..., -L at index L).
    auto full = at::constant_pad_nd(k[0], {0, L});
    if (directions_ == 2) full = full + at::constant_pad_nd(k[1].flip(-1), {L, 0});
    auto y = at::fft_irfft(at::fft_rfft(u, 2 * L) * at::fft_rfft(full, 2 * L), 2 * L).narrow(-1, 0, L);
    // GELU on a contiguous [B, L, H] copy: LibTorch 1.13's float32 CPU
    // gelu_backward returns garbage when the incoming gradient is the strided
    // one of a matmul over a transposed input (test Float32GradientsMatchFloat64).
    y = at::gelu((y + u * d_.unsqueeze(-1)).transpose(1, 2).contiguous());
    return at::glu(out_->forward(y), -1);
  }

  // The causal forward's kernel has length L, so a step equals it at every
  // position of a sequence (t < L); the reverse kernel reads the future.
  bool decodes() const override { return causal_; }
  std::vector<torch::Tensor> decode_start(int64_t batch, const torch::TensorOptions& options) override {
    // Complex float for every narrower dtype: complex half lacks most kernels.
    const auto dtype = options.dtype().toScalarType() == at::kDouble ? at::kComplexDouble : at::kComplexFloat;
    return {at::zeros({batch, log_dt_.size(0), state_ / 2}, options.dtype(dtype))};
  }
  torch::Tensor decode_step(const torch::Tensor& x_t, std::vector<torch::Tensor>& state, int64_t /*position*/) override {
    TORCH_CHECK(state.size() == 1, "s4d: the decoding state is {h}");
    auto& h = state[0];  // [B, H, M]
    // The same ZOH coefficients as kernels(); recomputed per step (O(H N), as
    // the step itself) so they always follow the current parameters.
    auto dt = at::exp(log_dt_).unsqueeze(-1);
    auto a = at::complex(-at::exp(log_a_real_), a_imag_);
    auto da = at::exp(a * dt);
    auto db = ((da - 1.0) / a).to(h.scalar_type());
    auto c = at::view_as_complex(c_)[0].to(h.scalar_type());
    h = da.to(h.scalar_type()) * h + db * x_t.to(h.scalar_type()).unsqueeze(-1);
    auto y = 2.0 * at::real((c * h).sum(-1)).to(x_t.scalar_type());  // [B, H]
    y = at::gelu(y + x_t * d_);
    return at::glu(out_->forward(y), -1);
  }
  // The state after a prompt is one sum, h_L = sum_t da^(L-1-t) db x_t, taken
  // as kernels() takes its powers: lag = S i + j with S ~ sqrt(L), so only
  // da^j (j < S) and da^(S i) (i < L/S) are formed, never L powers per state.
  bool prefills_in_parallel() const override { return true; }
  torch::Tensor prefill(const torch::Tensor& x, std::vector<torch::Tensor>& state) override {
    TORCH_CHECK(state.size() == 1, "s4d: the decoding state is {h}");
    auto& h = state[0];  // [B, H, M]
    const int64_t Bsz = x.size(0), L = x.size(1), H = x.size(2);
    const int64_t S = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(L)))));
    const int64_t A = (L + S - 1) / S;
    const auto real = h.scalar_type() == at::kComplexDouble ? at::kDouble : at::kFloat;
    auto dt = at::exp(log_dt_).unsqueeze(-1).to(real);
    auto dta = (at::complex(-at::exp(log_a_real_), a_imag_).to(h.scalar_type())) * dt;  // [H, M]
    auto db = (at::exp(dta) - 1.0) / (dta / dt);
    auto powers = [&](int64_t count, int64_t stride) {  // da^(stride i), i < count: [H, M, count]
      return at::exp(dta.unsqueeze(-1) * (at::arange(count, at::TensorOptions().dtype(real).device(x.device())) *
                                          static_cast<double>(stride)));
    };
    // The prompt newest first, zero-padded to A x S: position L-1-lag at lag = S i + j.
    auto u = at::constant_pad_nd(x.flip(1).transpose(1, 2), {0, A * S - L}).to(h.scalar_type());  // [B, H, A S]
    auto inner = at::matmul(u.reshape({Bsz, H, A, S}), powers(S, 1).transpose(-1, -2).unsqueeze(0));  // [B, H, A, M]
    auto sum = (inner * powers(A, S).transpose(-1, -2).unsqueeze(0)).sum(2);                        // [B, H, M]
    h = h + db * sum;
    return forward(x, {});
  }

 private:
  // K[d, h, l] = 2 Re( sum_n C[d,h,n] (exp(Δ A) - 1)/A exp(Δ A l) ). The
  // Vandermonde matrix exp(Δ A l) is never formed: with l = a S + b (S ~ √L),
  // z^l = z^(aS) z^b, so K[a S + b] = sum_n (C_n z_n^(aS)) z_n^b is one batched
  // [A, N/2] x [N/2, S] matmul per channel — O(H N √L) memory instead of
  // O(H N L) (at d_model 256, N 64, L 4K: a few MB instead of ~1 GB per layer
  // kept for the backward pass), the same O(H N L) arithmetic.
  at::Tensor kernels(int64_t L) const {
    auto dt = at::exp(log_dt_).unsqueeze(-1);                     // [H, 1]
    auto a = at::complex(-at::exp(log_a_real_), a_imag_);          // [H, M]
    auto dta = a * dt;
    auto c = at::view_as_complex(c_) * (at::exp(dta) - 1.0) / a;  // [dirs, H, M]
    const int64_t S = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(L)))));
    const int64_t A = (L + S - 1) / S;
    auto powers = [&](int64_t count, int64_t stride) {  // z^(stride i), i < count: [H, M, count]
      return at::exp(dta.unsqueeze(-1) * (at::arange(count, log_dt_.options()) * static_cast<double>(stride)));
    };
    auto outer = (c.unsqueeze(-1) * powers(A, S)).transpose(-1, -2);  // [dirs, H, A, M]
    auto k = at::matmul(outer, powers(S, 1));                         // [dirs, H, A, S]
    return 2.0 * at::real(k).reshape({c.size(0), c.size(1), A * S}).narrow(-1, 0, L);
  }

  bool causal_;
  int64_t directions_;
  int64_t state_;
  torch::Tensor log_dt_, log_a_real_, a_imag_, c_, d_;
  torch::nn::Linear out_{nullptr};
};

std::vector<lra::OptionSpec> options() {
  return {
      {"d_state", int64_t{0},
       "N, real states per channel (N/2 complex modes); 0 = auto: the largest power of two <= 64 whose layer stays "
       "within 1.1x the attention's parameters (plugins/s4d/README.md)"},
      {"init", std::string("lin"), "imaginary parts of A: lin (S4D-Lin, pi n) | inv (S4D-Inv)"},
      {"bidirectional", true, "two kernels, past and future (S4's LRA models); the causal spec always uses one"},
      {"dt_min", 0.001, "smallest initial step Δ (log-uniform init)"},
      {"dt_max", 0.1, "largest initial step Δ"},
  };
}

[[noreturn]] void bad_option(const std::string& what) { throw lra::Error(lra::ErrorKind::rules, "s4d: " + what); }

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& o) {
  Config c;
  c.d_state = o.get_int("d_state");
  const std::string init = o.get_string("init");
  c.bidirectional = o.get_bool("bidirectional");
  c.dt_min = o.get_float("dt_min");
  c.dt_max = o.get_float("dt_max");
  if (c.d_state < 0 || c.d_state % 2 != 0)
    bad_option("d_state must be 0 (auto) or a positive even number (N/2 complex modes), got " +
               std::to_string(c.d_state));
  if (init != "lin" && init != "inv") bad_option("init must be \"lin\" or \"inv\", got \"" + init + "\"");
  c.init = init == "lin" ? Init::lin : Init::inv;
  if (!(c.dt_min > 0.0) || !(c.dt_max >= c.dt_min))
    bad_option("need 0 < dt_min <= dt_max, got dt_min " + std::to_string(c.dt_min) + ", dt_max " +
               std::to_string(c.dt_max));
  return std::make_shared<S4D>(spec, c);
}

}  // namespace

LRA_MIXER_PLUGIN("s4d", "1.0.0",
                 "Diagonal state-space layer S4D (Gu et al. 2022): ZOH, Vandermonde kernel, FFT convolution, "
                 "bidirectional or causal",
                 LRA_CAP_CAUSAL | LRA_CAP_PADDING_MASK, options, create)
