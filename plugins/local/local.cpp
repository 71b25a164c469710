// local — block-local softmax attention, the "Local Attention" baseline of the
// Long Range Arena (Tay et al., ICLR 2021, appendix B): the sequence is cut into
// non-overlapping CONTIGUOUS blocks and each query attends to the keys of its
// own block only. LRA's code groups positions by stride instead (defect Q3);
// this plugin implements the pattern the paper describes.
//
// Work is done per block with batched matmuls on [B, H, blocks, block, dh], so
// time is O(L·block·dh) and memory O(L·block): no L×L tensor is ever built.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <ATen/ATen.h>
#include <lra/attention.h>
#include <lra/mixer.h>

namespace {

class LocalAttention final : public lra::Mixer {
 public:
  LocalAttention(const lra::MixerSpec& spec, int64_t block, bool mask_queries)
      : heads_(spec.heads), block_(block), causal_(spec.causal), mask_queries_(mask_queries && !spec.causal),
        dropout_(spec.attention_dropout),
        proj_(register_module("proj", lra::QKVO(spec.d_model, spec.qkv_dim))) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    const int64_t B = x.size(0), L = x.size(1);
    // A block longer than the sequence is the sequence itself (no wasted padding).
    const int64_t block = std::min(block_, L);
    const int64_t nblocks = (L + block - 1) / block;
    const int64_t padded = nblocks * block;
    const auto real = mask.defined() ? mask.to(at::kBool) : at::ones({B, L}, x.options().dtype(at::kBool));

    auto q = blocks(lra::ops::split_heads(proj_->q(x), heads_), block, nblocks);
    auto k = blocks(lra::ops::split_heads(proj_->k(x), heads_), block, nblocks);
    auto v = blocks(lra::ops::split_heads(proj_->v(x), heads_), block, nblocks);
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));

    // [B, H, nblocks, block, block]: each block's queries against its own keys.
    auto logits = at::matmul(q, k.transpose(-2, -1)).mul_(scale);
    // Keys that are padding (given, or added here to fill the last block) get
    // no weight. [B, 1, nblocks, 1, block]
    auto key_ok = at::constant_pad_nd(real, {0, padded - L}, 0).reshape({B, 1, nblocks, 1, block});
    logits.masked_fill_(key_ok.logical_not(), lra::ops::kMaskedLogit);
    if (causal_) {
      // Within-block causality: position r of a block reads positions <= r.
      logits.masked_fill_(lra::ops::causal_allowed(block, x.device()).logical_not(), lra::ops::kMaskedLogit);
    }
    if (mask_queries_) {
      // LRA's outer-product mask (local_attention.py:340-356): a padded
      // query's whole row is -1e10, so it averages its block's values
      // uniformly. The positions added here to fill the last block are not
      // keys at all (LRA's lengths are multiples of the block): -inf.
      logits.masked_fill_(key_ok.transpose(-1, -2).logical_not(), lra::ops::kMaskedLogit);
      if (padded > L) {
        const auto beyond = at::arange(padded, x.options().dtype(at::kLong)).ge(L).view({1, 1, nblocks, 1, block});
        logits.masked_fill_(beyond, -std::numeric_limits<double>::infinity());
      }
    }
    auto probs = at::softmax(logits, -1);
    probs = lra::ops::dropout(probs, dropout_, is_training());

    auto out = at::matmul(probs, v)                       // [B, H, nblocks, block, dh]
                   .reshape({B, heads_, padded, v.size(-1)})  // back to one sequence axis
                   .narrow(2, 0, L);                       // cut the internal padding
    return proj_->o(lra::ops::merge_heads(out));
  }

  // Decoding: a KV cache of the current block only, emptied at each block's
  // first position, so memory per sequence stays at most one block.
  bool decodes() const override { return causal_; }
  std::vector<torch::Tensor> decode_start(int64_t batch, const torch::TensorOptions& options) override {
    return lra::ops::kv_cache_start(*proj_, heads_, batch, options);
  }
  torch::Tensor decode_step(const torch::Tensor& x_t, std::vector<torch::Tensor>& state, int64_t position) override {
    if (position % block_ == 0)
      for (auto& t : state) t = t.narrow(2, 0, 0);
    return lra::ops::kv_cache_step(*proj_, x_t, state, heads_, 0.0, position);
  }
  // The cache after a prompt holds its last block's positions so far: those
  // from the start of the block of position L - 1.
  bool prefills_in_parallel() const override { return true; }
  torch::Tensor prefill(const torch::Tensor& x, std::vector<torch::Tensor>& state) override {
    const int64_t L = x.size(1), start = L == 0 ? 0 : (L - 1) / block_ * block_;
    state = lra::ops::kv_cache_prefill(*proj_, x.narrow(1, start, L - start), heads_, 0.0);
    return forward(x, {});
  }

 private:
  // [B, H, L, dh] -> zero-padded to nblocks·block positions -> [B, H, nblocks, block, dh]
  static at::Tensor blocks(const at::Tensor& t, int64_t block, int64_t nblocks) {
    auto p = at::constant_pad_nd(t, {0, 0, 0, nblocks * block - t.size(2)}, 0.0);
    return p.reshape({t.size(0), t.size(1), nblocks, block, t.size(3)});
  }

  int64_t heads_;
  int64_t block_;
  bool causal_;
  bool mask_queries_;
  double dropout_;
  lra::QKVO proj_;
};

std::vector<lra::OptionSpec> options() {
  return {{"block_size", int64_t{50},
           "tokens per contiguous, non-overlapping block; each query attends to its own block "
           "(LRA: 50, image and Pathfinder configs 64)"},
          {"mask_queries", false,
           "a padded query averages its block's values uniformly, as LRA's outer-product mask makes it "
           "(matters where padding is pooled: MEAN over Pathfinder's masked pixels, mean_padded); "
           "false: it attends like a real query. No effect in causal mode"}};
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& opts) {
  const int64_t block = opts.get_int("block_size");
  if (block < 1)
    throw lra::Error(lra::ErrorKind::rules, "mixer 'local': block_size must be >= 1, got " + std::to_string(block));
  return std::make_shared<LocalAttention>(spec, block, opts.get_bool("mask_queries"));
}

}  // namespace

LRA_MIXER_PLUGIN("local", "1.0.0",
                 "Local attention over contiguous non-overlapping blocks (LRA, Tay et al. 2021, appendix B)",
                 LRA_CAP_CAUSAL | LRA_CAP_PADDING_MASK, options, create)
