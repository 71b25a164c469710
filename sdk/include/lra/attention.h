// lra/attention.h — helpers every mixer needs, shared by built-in and
// third-party plugins: head splitting, padding/causal masking, the reference
// softmax attention (the op parity tests compare against), and the Q/K/V/O
// projections LRA uses (no biases, Xavier-uniform).
#pragma once

#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <torch/version.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "lra/dropout.h"
#include "lra/rotary.h"

namespace lra {
inline namespace v1 {
namespace ops {

// Logit added to masked positions. Finite (as in LRA's -1e10) so rows with
// every key masked become a uniform average instead of NaN.
constexpr double kMaskedLogit = -1e10;

// [B, L, H*Dh] -> [B, H, L, Dh]
inline at::Tensor split_heads(const at::Tensor& x, int64_t heads) {
  const auto B = x.size(0), L = x.size(1), HD = x.size(2);
  TORCH_CHECK(HD % heads == 0, "width ", HD, " is not divisible by ", heads, " heads");
  return x.view({B, L, heads, HD / heads}).transpose(1, 2);
}

// [B, H, L, Dh] -> [B, L, H*Dh]
inline at::Tensor merge_heads(const at::Tensor& x) {
  const auto B = x.size(0), H = x.size(1), L = x.size(2), D = x.size(3);
  return x.transpose(1, 2).contiguous().view({B, L, H * D});
}

// Boolean "may attend" matrix [L, L] for causal attention (key j <= query i).
inline at::Tensor causal_allowed(int64_t L, const at::Device& device) {
  return at::ones({L, L}, at::TensorOptions().dtype(at::kBool).device(device)).tril();
}

// LRA masks attention logits with the outer product of the query and key
// padding masks (-1e10 where either is padding), so a padded query's row is
// constant and softmax makes it the uniform average of every value it scores.
// For a mixer that computes its rows blockwise but whose LRA counterpart
// scored every key (longformer, sparse_transformer): the rows of padded
// queries in `out` [B, H, Lq, Dv] replaced by the mean of `v` [B, H, Lk, Dv]
// over all Lk keys. `query_real` [B, Lq] bool. Attention dropout is not
// applied to these rows (nor on softmax_attention's fused path, which uses it).
inline at::Tensor uniform_rows_for_padded_queries(const at::Tensor& out, const at::Tensor& query_real,
                                                  const at::Tensor& v) {
  TORCH_CHECK(query_real.dim() == 2 && query_real.size(0) == out.size(0) && query_real.size(1) == out.size(2),
              "query_real must be [B, Lq] = [", out.size(0), ", ", out.size(2), "], got ", query_real.sizes());
  return at::where(query_real.unsqueeze(1).unsqueeze(-1), out, v.mean(-2, /*keepdim=*/true).to(out.scalar_type()));
}

// Reference softmax attention.
//   q, k, v:  [B, H, Lq, Dh], [B, H, Lk, Dh], [B, H, Lk, Dv]
//   key_mask: [B, Lk] bool, true = real key (undefined tensor = no padding)
//   causal:   query i attends keys j <= i (requires Lq == Lk)
//   probs_out: if non-null receives the attention probabilities [B, H, Lq, Lk]
//   query_mask: [B, Lq] bool (self-attention: the same mask as key_mask).
//     LRA masks the logits with the outer product of query and key masks, so
//     a masked query's row is all kMaskedLogit: a uniform average over every
//     key, masked ones included. Passing it reproduces that (it matters when
//     masked positions are pooled, e.g. black pixels under MEAN pooling);
//     undefined = masked queries attend to the real keys like any other.
//     Ignored with causal.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
// cuDNN's fused attention backward is wrong on Hopper for a call with an
// attention mask whose key length is 64 mod 128 (pytorch/pytorch#196678; the
// SDK's attention at length 64 gave bfloat16 gradients 62x off the tolerance
// on an H200, docs/measured/gpu-check/). Such a call runs with cuDNN's kernel
// off, restored after it; every other call keeps it, since turning it off
// everywhere halved the Text 4K training step there.
class CudnnAttentionOff {
 public:
  explicit CudnnAttentionOff(bool off) : off_(off && at::globalContext().userEnabledCuDNNSDP()) {
    if (off_) at::globalContext().setSDPUseCuDNN(false);
  }
  ~CudnnAttentionOff() {
    if (off_) at::globalContext().setSDPUseCuDNN(true);
  }
  CudnnAttentionOff(const CudnnAttentionOff&) = delete;
  CudnnAttentionOff& operator=(const CudnnAttentionOff&) = delete;

 private:
  bool off_;
};
#endif

// SDPA's `scale` argument (LibTorch >= 2.1) lets softmax_attention zero-pad
// small head dimensions on CUDA (below).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define LRA_SDK_PADS_HEAD_DIMS 1
#endif

#ifdef LRA_SDK_PADS_HEAD_DIMS
// Whether softmax_attention pads small head dimensions on CUDA (below);
// LRA_PAD_HEAD_DIM=0 turns it off, for A/B measurements.
inline bool pad_small_head_dims() {
  static const bool on = [] {
    const char* v = std::getenv("LRA_PAD_HEAD_DIM");
    return !(v && v[0] == '0' && v[1] == '\0');
  }();
  return on;
}
#endif

inline at::Tensor softmax_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    const at::Tensor& key_mask, bool causal, double dropout_p,
                                    bool training, at::Tensor* probs_out = nullptr,
                                    const at::Tensor& extra_logits = {}, const at::Tensor& query_mask = {}) {
  const bool uniform_masked_rows = query_mask.defined() && !causal;
  if (uniform_masked_rows) {
    TORCH_CHECK(query_mask.dim() == 2 && query_mask.size(0) == q.size(0) && query_mask.size(1) == q.size(2),
                "query_mask must be [B, Lq] = [", q.size(0), ", ", q.size(2), "], got ", query_mask.sizes());
  }
#if TORCH_VERSION_MAJOR >= 2
  // LibTorch 2.x: the fused kernel (flash attention for causal or unmasked
  // inputs on CUDA, memory-efficient attention with a padding mask), never
  // materialising the L x L matrix. The mask is additive with the same
  // finite kMaskedLogit, so results match the explicit path below.
  // Not with attention dropout in CPU training: the fused kernel draws its own
  // masks, which would depend on how the batch is split over ranks
  // (lra/dropout.h); on CUDA the fused kernel's speed wins (docs/scaling.md).
  const bool split_invariant_dropout = training && dropout_p > 0.0 && q.device().is_cpu();
  if (!probs_out && !extra_logits.defined() && !split_invariant_dropout) {
    TORCH_CHECK(!causal || q.size(2) == k.size(2), "causal attention needs equal query and key lengths");
    std::optional<at::Tensor> mask;
    bool is_causal = causal;
    if (key_mask.defined()) {
      auto m = at::zeros(key_mask.sizes(), q.options()).masked_fill(key_mask.logical_not(), kMaskedLogit);
      m = m.unsqueeze(1).unsqueeze(2);  // [B, 1, 1, Lk]
      if (causal) {
        m = m.masked_fill(causal_allowed(q.size(2), q.device()).logical_not(), kMaskedLogit);  // [B, 1, L, L]
        is_causal = false;
      }
      mask = m;
    }
    at::Tensor out;
    {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
      CudnnAttentionOff cudnn_off(mask.has_value() && q.is_cuda() && k.size(2) % 128 == 64);
#endif
#ifdef LRA_SDK_PADS_HEAD_DIMS
      // Head dimensions that are not a multiple of 8 (Pathfinder's 4) are
      // refused by the fused CUDA kernels in half precision, and the call fell
      // back to the L x L math kernel. Zero columns change no dot product, so
      // q, k and v are padded to the next multiple of 8 (the scale kept at
      // 1/sqrt(Dh)) and the output's padding cut off.
      const int64_t pad_qk = (8 - q.size(-1) % 8) % 8, pad_v = (8 - v.size(-1) % 8) % 8;
      if (q.is_cuda() && (pad_qk || pad_v) && pad_small_head_dims()) {
        const auto padded = [](const at::Tensor& t, int64_t n) { return n ? at::constant_pad_nd(t, {0, n}) : t; };
        out = at::scaled_dot_product_attention(padded(q, pad_qk), padded(k, pad_qk), padded(v, pad_v), mask,
                                               training ? dropout_p : 0.0, is_causal,
                                               1.0 / std::sqrt(static_cast<double>(q.size(-1))))
                  .narrow(-1, 0, v.size(-1));
      } else
#endif
      out = at::scaled_dot_product_attention(q, k, v, mask, training ? dropout_p : 0.0, is_causal);
    }
    // A uniform row is the mean of the values; no L x L mask is built for it
    // (attention dropout is not applied to these rows on this path).
    if (uniform_masked_rows)
      out = uniform_rows_for_padded_queries(out, query_mask, v);
    return out;
  }
#endif
  // Scaling q (L x Dh) rather than the logits (L x L) and masking in place
  // save two passes over, and two allocations of, the L x L matrix (-17% of a
  // CPU training step at LRA Text size; bench/cpu_step/README.md).
  auto logits = at::matmul(q * (1.0 / std::sqrt(static_cast<double>(q.size(-1)))), k.transpose(-2, -1));
  if (extra_logits.defined()) logits = logits + extra_logits;
  // The masks combined first (at most [B, 1, Lq, Lk] booleans), then one
  // in-place pass over the [B, H, Lq, Lk] logits forward and one backward:
  // each separate fill cost two (-7% of a CPU step at LRA Text size).
  at::Tensor masked;
  auto mask_also = [&masked](const at::Tensor& m) { masked = masked.defined() ? masked.logical_or(m) : m; };
  if (key_mask.defined()) mask_also(key_mask.logical_not().unsqueeze(1).unsqueeze(2));  // [B, 1, 1, Lk]
  if (causal) {
    TORCH_CHECK(q.size(2) == k.size(2), "causal attention needs equal query and key lengths");
    mask_also(causal_allowed(q.size(2), q.device()).logical_not());  // [Lq, Lk]
  }
  // Every logit of a masked query equal: softmax gives the uniform row.
  if (uniform_masked_rows) mask_also(query_mask.logical_not().unsqueeze(1).unsqueeze(-1));  // [B, 1, Lq, 1]
  if (masked.defined()) logits.masked_fill_(masked, kMaskedLogit);
  auto probs = at::softmax(logits, -1);
  if (probs_out) *probs_out = probs.detach();
  probs = lra::ops::dropout(probs, dropout_p, training);
  return at::matmul(probs, v);
}

// Xavier-uniform for a [out, in] weight, as Flax's default for LRA's dense layers.
inline void xavier_uniform(at::Tensor& w) {
  torch::NoGradGuard g;
  torch::nn::init::xavier_uniform_(w);
}

}  // namespace ops

// Query/key/value/output projections of multi-head attention, as LRA builds
// them: d_model -> qkv_dim for Q, K, V; qkv_dim -> d_model for the output;
// no biases; Xavier-uniform weights.
class QKVOImpl : public torch::nn::Module {
 public:
  QKVOImpl(int64_t d_model, int64_t qkv_dim, bool shared_qk = false)
      : q(register_module("q", torch::nn::Linear(torch::nn::LinearOptions(d_model, qkv_dim).bias(false)))),
        v(register_module("v", torch::nn::Linear(torch::nn::LinearOptions(d_model, qkv_dim).bias(false)))),
        o(register_module("o", torch::nn::Linear(torch::nn::LinearOptions(qkv_dim, d_model).bias(false)))) {
    if (!shared_qk) {
      k = register_module("k", torch::nn::Linear(torch::nn::LinearOptions(d_model, qkv_dim).bias(false)));
      ops::xavier_uniform(k->weight);
    }
    ops::xavier_uniform(q->weight);
    ops::xavier_uniform(v->weight);
    ops::xavier_uniform(o->weight);
  }
  torch::nn::Linear q, v, o, k{nullptr};
};
TORCH_MODULE(QKVO);

namespace ops {

// Full multi-head softmax attention of x through the projections p: the
// `transformer` mixer, and the reference the host budgets against.
// rotary_base > 0 rotates queries and keys (lra/rotary.h).
inline at::Tensor multi_head_attention(QKVOImpl& p, const at::Tensor& x, const at::Tensor& key_mask, int64_t heads,
                                       bool causal, double dropout_p, bool training, at::Tensor* probs_out = nullptr,
                                       double rotary_base = 0.0) {
  auto q = maybe_rotary(split_heads(p.q(x), heads), rotary_base);
  auto k = maybe_rotary(split_heads(p.k(x), heads), rotary_base);
  auto v = split_heads(p.v(x), heads);
  // Self-attention: the padding mask masks queries too, as in LRA (see softmax_attention).
  return p.o(merge_heads(softmax_attention(q, k, v, key_mask, causal, dropout_p, training, probs_out, {}, key_mask)));
}

// One decoding step of causal multi-head softmax attention through the
// projections p with a KV cache (Mixer::decode_step): x_t [B, D] -> [B, D].
// state = {keys, values}, each [B, H, T, dh]: this step's key and value are
// appended, and the query reads all T + 1. rotary_base > 0 rotates this
// step's query and key at `position`, as maybe_rotary does in the forward.
inline std::vector<at::Tensor> kv_cache_start(const QKVOImpl& p, int64_t heads, int64_t batch,
                                              const at::TensorOptions& options) {
  const int64_t dh = p.q->weight.size(0) / heads;
  return {at::zeros({batch, heads, 0, dh}, options), at::zeros({batch, heads, 0, dh}, options)};
}

inline at::Tensor kv_cache_step(QKVOImpl& p, const at::Tensor& x_t, std::vector<at::Tensor>& state, int64_t heads,
                                double rotary_base, int64_t position) {
  TORCH_CHECK(state.size() == 2, "kv_cache_step: the state is {keys, values}");
  const auto x = x_t.unsqueeze(1);  // [B, 1, D]
  auto q = split_heads(p.q(x), heads), k = split_heads(p.k(x), heads), v = split_heads(p.v(x), heads);
  if (rotary_base > 0) {
    q = rotary_embed(q, rotary_base, position);
    k = rotary_embed(k, rotary_base, position);
  }
  state[0] = at::cat({state[0], k}, 2);
  state[1] = at::cat({state[1], v}, 2);
  auto logits = at::matmul(q * (1.0 / std::sqrt(static_cast<double>(q.size(-1)))), state[0].transpose(-2, -1));
  return p.o(merge_heads(at::matmul(at::softmax(logits, -1), state[1]))).squeeze(1);
}

// The KV cache after a whole prompt x [B, L, D] in one projection: what L
// kv_cache_steps from kv_cache_start leave (keys rotated at positions 0 .. L-1).
inline std::vector<at::Tensor> kv_cache_prefill(QKVOImpl& p, const at::Tensor& x, int64_t heads, double rotary_base) {
  auto k = split_heads(p.k(x), heads), v = split_heads(p.v(x), heads);
  if (rotary_base > 0) k = rotary_embed(k, rotary_base);
  return {k.contiguous(), v.contiguous()};
}

}  // namespace ops

}  // namespace v1
}  // namespace lra
