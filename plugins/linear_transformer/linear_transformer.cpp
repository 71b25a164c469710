// linear_transformer — linear attention with the elu(x) + 1 feature map
// (Katharopoulos, Vyas, Pappas, Fleuret, 2020, "Transformers are RNNs: Fast
// Autoregressive Transformers with Linear Attention").
//
//   out_i = phi(q_i)^T sum_j phi(k_j) v_j^T / (phi(q_i)^T sum_j phi(k_j) + eps)
//
// Bidirectional: K'^T V is formed once, O(L) time and memory. Causal: the sums
// run over j <= i, computed chunk by chunk (a small lower-triangular block
// inside each chunk plus an exclusive prefix sum of per-chunk K'^T V states).
// Padded keys get zero features, so they carry exactly no weight, unless
// mask_keys = false: LRA's linear attention applies no mask at all, so padding
// (and, under the zero-pixel mask, black pixels) stay keys there.
#include <algorithm>
#include <string>

#include <ATen/ATen.h>
#include <lra/attention.h>
#include <lra/mixer.h>
#include <lra/rotary.h>

namespace {

// The positive feature map of the paper: elu(x) + 1 > 0.
at::Tensor feature_map(const at::Tensor& x) { return at::elu(x) + 1.0; }

// Sum over dimension `dim` of all earlier entries (entry n gets x_0 + ... + x_{n-1}).
at::Tensor exclusive_cumsum(const at::Tensor& x, int64_t dim) {
  auto inclusive = at::cumsum(x, dim);
  auto first = at::zeros_like(x.narrow(dim, 0, 1));
  return at::cat({first, inclusive.narrow(dim, 0, x.size(dim) - 1)}, dim);
}

// Pads dimension 2 (the sequence axis of [B, H, L, *]) with zeros up to `len`.
at::Tensor pad_seq(const at::Tensor& x, int64_t len) {
  const int64_t extra = len - x.size(2);
  return extra == 0 ? x : at::constant_pad_nd(x, {0, 0, 0, extra});
}

// sum_j (q_i . k_j) v_j over every key j. q, k: [B, H, L, F]; v: [B, H, L, Dv].
at::Tensor bidirectional_sum(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return at::matmul(q, at::matmul(k.transpose(-2, -1), v));  // K^T V is [B, H, F, Dv]
}

// The same sum restricted to keys j <= i. The sequence is cut into chunks of
// C: inside a chunk the C x C lower-triangular score block is explicit;
// earlier chunks enter through an exclusive prefix sum of per-chunk K^T V
// states. Memory O(L*C + (L/C)*F*Dv): with C near Dv this is O(L*F), never L x L.
at::Tensor causal_sum(const at::Tensor& fq, const at::Tensor& fk, const at::Tensor& v, int64_t chunk) {
  const int64_t B = fq.size(0), H = fq.size(1), L = fq.size(2), F = fq.size(3), Dv = v.size(3);
  const int64_t C = std::min(chunk, L), N = (L + C - 1) / C;
  // Internal padding has zero features, so it adds nothing to any sum.
  auto q = pad_seq(fq, N * C).view({B, H, N, C, F});
  auto k = pad_seq(fk, N * C).view({B, H, N, C, F});
  auto vv = pad_seq(v, N * C).view({B, H, N, C, Dv});

  auto scores = at::matmul(q, k.transpose(-2, -1)).tril();                    // [B, H, N, C, C], j <= i
  auto kv_before = exclusive_cumsum(at::matmul(k.transpose(-2, -1), vv), 2);  // [B, H, N, F, Dv]
  auto out = at::matmul(scores, vv) + at::matmul(q, kv_before);
  return out.view({B, H, N * C, Dv}).narrow(2, 0, L);
}

class LinearAttention final : public lra::Mixer {
 public:
  LinearAttention(const lra::MixerSpec& spec, double eps, int64_t chunk, bool mask_keys)
      : heads_(spec.heads), causal_(spec.causal), mask_keys_(mask_keys), eps_(eps), chunk_(chunk),
        rotary_base_(spec.rotary_base),
        proj_(register_module("proj", lra::QKVO(spec.d_model, spec.qkv_dim))) {}

  // spec.attention_dropout is not applied: no attention matrix exists to drop
  // from (LRA's linear attention has none either).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    auto fq = feature_map(lra::ops::split_heads(proj_->q(x), heads_));
    auto fk = feature_map(lra::ops::split_heads(proj_->k(x), heads_));
    auto v = lra::ops::split_heads(proj_->v(x), heads_);
    // Padded keys: zero features => zero weight in numerator and denominator.
    if (mask.defined() && mask_keys_) fk = fk * mask.to(fk.scalar_type()).unsqueeze(1).unsqueeze(-1);
    auto sum = [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& values) {
      return causal_ ? causal_sum(q, k, values, chunk_) : bidirectional_sum(q, k, values);
    };
    at::Tensor num, den;
    if (rotary_base_ > 0) {
      // RoFormer's linear attention: rotated features in the numerator, the
      // plain (positive) ones in the normaliser so it stays > 0.
      num = sum(lra::ops::rotary_embed(fq, rotary_base_), lra::ops::rotary_embed(fk, rotary_base_), v);
      den = sum(fq, fk, at::ones_like(v.narrow(-1, 0, 1)));
    } else {
      // One pass: a column of ones appended to V yields the normaliser.
      auto both = sum(fq, fk, at::cat({v, at::ones_like(v.narrow(-1, 0, 1))}, -1));
      num = both.narrow(-1, 0, v.size(-1));
      den = both.narrow(-1, v.size(-1), 1);
    }
    return proj_->o(lra::ops::merge_heads(num / (den + eps_)));
  }

  // Decoding as the RNN of the paper's title: state = {sum_j phi(k_j) v_j^T
  // [B, H, F, Dv], sum_j phi(k_j) [B, H, F, 1]}, the same size at any context.
  bool decodes() const override { return causal_; }
  std::vector<torch::Tensor> decode_start(int64_t batch, const torch::TensorOptions& options) override {
    const int64_t dh = proj_->q->weight.size(0) / heads_;
    return {at::zeros({batch, heads_, dh, dh}, options), at::zeros({batch, heads_, dh, 1}, options)};
  }
  torch::Tensor decode_step(const torch::Tensor& x_t, std::vector<torch::Tensor>& state, int64_t position) override {
    TORCH_CHECK(state.size() == 2, "linear_transformer: the decoding state is {KV, K}");
    const auto x = x_t.unsqueeze(1);  // [B, 1, D]
    auto fq = feature_map(lra::ops::split_heads(proj_->q(x), heads_));
    auto fk = feature_map(lra::ops::split_heads(proj_->k(x), heads_));
    auto v = lra::ops::split_heads(proj_->v(x), heads_);
    // Rotary: rotated features in the numerator, plain ones in the normaliser (as forward).
    auto nq = rotary_base_ > 0 ? lra::ops::rotary_embed(fq, rotary_base_, position) : fq;
    auto nk = rotary_base_ > 0 ? lra::ops::rotary_embed(fk, rotary_base_, position) : fk;
    state[0] = state[0] + at::matmul(nk.transpose(-2, -1), v);
    state[1] = state[1] + fk.transpose(-2, -1);
    auto num = at::matmul(nq, state[0]), den = at::matmul(fq, state[1]);
    return proj_->o(lra::ops::merge_heads(num / (den + eps_))).squeeze(1);
  }
  // The recurrence's state after a prompt is one sum over it: {sum_j phi(k_j) v_j^T, sum_j phi(k_j)}.
  bool prefills_in_parallel() const override { return true; }
  torch::Tensor prefill(const torch::Tensor& x, std::vector<torch::Tensor>& state) override {
    TORCH_CHECK(state.size() == 2, "linear_transformer: the decoding state is {KV, K}");
    auto fk = feature_map(lra::ops::split_heads(proj_->k(x), heads_));  // [B, H, L, F]
    auto v = lra::ops::split_heads(proj_->v(x), heads_);
    auto nk = rotary_base_ > 0 ? lra::ops::rotary_embed(fk, rotary_base_) : fk;
    state[0] = state[0] + at::matmul(nk.transpose(-2, -1), v);
    state[1] = state[1] + fk.sum(2).unsqueeze(-1);
    return forward(x, {});
  }

 private:
  int64_t heads_;
  bool causal_, mask_keys_;
  double eps_;
  int64_t chunk_;
  double rotary_base_;
  lra::QKVO proj_;
};

std::vector<lra::OptionSpec> options() {
  return {
      {"eps", 1e-6, "added to the normaliser phi(q)^T sum phi(k) (LRA: 1e-6)"},
      {"chunk", int64_t{64}, "causal mode only: chunk length of the prefix sums (memory/speed, not results)"},
      {"mask_keys", true,
       "padded keys get zero features; false reproduces LRA, which applies no mask (padding and, under the "
       "zero-pixel mask, black pixels stay keys; it fails the padding_mask conformance check)"},
  };
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& o) {
  const double eps = o.get_float("eps");
  const int64_t chunk = o.get_int("chunk");
  if (!(eps >= 0.0)) throw lra::Error(lra::ErrorKind::rules, "linear_transformer: eps must be >= 0");
  if (chunk < 1) throw lra::Error(lra::ErrorKind::rules, "linear_transformer: chunk must be >= 1");
  return std::make_shared<LinearAttention>(spec, eps, chunk, o.get_bool("mask_keys"));
}

}  // namespace

LRA_MIXER_PLUGIN("linear_transformer", "1.1.0",
                 "Linear attention with elu+1 features (Katharopoulos et al. 2020), O(L), causal via prefix sums",
                 LRA_CAP_CAUSAL | LRA_CAP_PADDING_MASK | LRA_CAP_ROTARY, options, create)
