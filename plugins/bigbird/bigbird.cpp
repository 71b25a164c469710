// bigbird — block-sparse attention of BigBird (Zaheer et al., NeurIPS 2020,
// "Big Bird: Transformers for Longer Sequences"), ITC variant as used by LRA.
//
// The sequence is cut into blocks of `block_size` tokens. The first and the
// last block are global: their queries attend to every key, and every query
// attends to their keys. Every other query block i attends to
//   [own block i, left i-1, right i+1, first block, last block, r random blocks]
// gathered into one key set of (5 + r) blocks. Random blocks are fixed per layer
// (drawn from spec.seed, spec.layer_index and the number of blocks) and differ
// per head. A gathered slot that repeats a block already in the set (block 1's
// left neighbour is the first block, for instance) is masked, so no key is
// counted twice.
//
// Memory is O(L·(5 + r)·block) for the sparse rows plus O(2·block·L) for the two
// global query blocks: no L×L tensor exists (except when attention recording
// is switched on, which scatters the sparse probabilities into a dense matrix).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <lra/attention.h>
#include <lra/mixer.h>

namespace {

// Slots of a non-global query block's key set, in this order. Earlier slots
// win when two slots name the same block.
constexpr int64_t kOwn = 0, kLeft = 1, kRight = 2, kFirst = 3, kLast = 4, kFixedSlots = 5;

// SplitMix64 finaliser: spreads (seed, layer, blocks) into a generator seed.
uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The key blocks every non-global query block reads, for every head.
//   blocks: [H, nb-2, S] int64 key-block index (S = 5 + r)
//   fresh:  [H, nb-2, S] bool, false where the slot repeats an earlier slot
struct BlockPattern {
  at::Tensor blocks;
  at::Tensor fresh;
};

// Draws the random blocks. std::mt19937_64 is specified bit-for-bit by the C++
// standard; the standard distributions are not, so indices are taken as
// `engine() % n` (a bias of < n / 2^64, irrelevant here) to make the pattern
// identical on every platform. For each head and each query block i (in that
// order) a partial Fisher-Yates shuffle picks min(r, candidates) distinct blocks
// from the candidates: all blocks except 0, nb-1, i-1, i, i+1. When fewer than r
// candidates exist, the spare slots repeat block i and are masked.
BlockPattern make_pattern(int64_t nb, int64_t heads, int64_t r, uint64_t seed, int64_t layer) {
  const int64_t rows = nb - 2, S = kFixedSlots + r;
  std::mt19937_64 engine(mix64(seed ^ mix64(static_cast<uint64_t>(layer) ^ mix64(static_cast<uint64_t>(nb)))));
  std::vector<int64_t> blocks(heads * rows * S);
  std::vector<int64_t> fresh(heads * rows * S, 1);
  std::vector<int64_t> cand;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 1; i <= rows; ++i) {
      int64_t* slot = &blocks[(h * rows + (i - 1)) * S];
      int64_t* ok = &fresh[(h * rows + (i - 1)) * S];
      slot[kOwn] = i, slot[kLeft] = i - 1, slot[kRight] = i + 1, slot[kFirst] = 0, slot[kLast] = nb - 1;
      ok[kFirst] = i - 1 != 0;     // block 1: its left neighbour is the first block
      ok[kLast] = i + 1 != nb - 1;  // block nb-2: its right neighbour is the last block
      cand.clear();
      for (int64_t j = 1; j < nb - 1; ++j)
        if (j < i - 1 || j > i + 1) cand.push_back(j);
      const int64_t take = std::min<int64_t>(r, static_cast<int64_t>(cand.size()));
      for (int64_t t = 0; t < take; ++t) {
        const int64_t left = static_cast<int64_t>(cand.size()) - t;
        const int64_t pick = t + static_cast<int64_t>(engine() % static_cast<uint64_t>(left));
        std::swap(cand[t], cand[pick]);
        slot[kFixedSlots + t] = cand[t];
      }
      for (int64_t t = take; t < r; ++t) slot[kFixedSlots + t] = i, ok[kFixedSlots + t] = 0;
    }
  }
  const auto i64 = at::TensorOptions().dtype(at::kLong);
  BlockPattern p;
  p.blocks = at::tensor(blocks, i64).view({heads, rows, S});
  p.fresh = at::tensor(fresh, i64).view({heads, rows, S}).to(at::kBool);
  return p;
}

class BigBirdAttention final : public lra::Mixer {
 public:
  BigBirdAttention(const lra::MixerSpec& spec, int64_t block, int64_t rand_blocks, bool mask_queries)
      : heads_(spec.heads), block_(block), rand_(rand_blocks), layer_(spec.layer_index), seed_(spec.seed),
        mask_queries_(mask_queries), dropout_(spec.attention_dropout), proj_(register_module("proj", lra::QKVO(spec.d_model, spec.qkv_dim))) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    const int64_t B = x.size(0), L = x.size(1);
    // A block longer than the sequence is the sequence itself (no wasted padding).
    const int64_t bs = std::min(block_, L);
    const int64_t nb = (L + bs - 1) / bs, padded = nb * bs;
    const auto real = mask.defined() ? mask.to(at::kBool) : at::ones({B, L}, x.options().dtype(at::kBool));
    // Positions added to fill the last block are masked like padding.
    const auto key_ok = at::constant_pad_nd(real, {0, padded - L}, 0);  // [B, padded]

    auto q = pad_len(lra::ops::split_heads(proj_->q(x), heads_), padded);
    auto k = pad_len(lra::ops::split_heads(proj_->k(x), heads_), padded);
    auto v = pad_len(lra::ops::split_heads(proj_->v(x), heads_), padded);

    at::Tensor dense;  // [B, H, padded, padded], only when recording
    if (record_attention_) dense = at::zeros({B, heads_, padded, padded}, x.options());

    at::Tensor out;  // [B, H, padded, dh]
    if (nb <= 2) {
      // Every block is global: plain softmax attention.
      out = global_rows(q, k, v, key_ok, dense.defined() ? &dense : nullptr);
    } else {
      at::Tensor p_first, p_last;
      auto first = global_rows(q.narrow(2, 0, bs), k, v, key_ok, dense.defined() ? &p_first : nullptr);
      auto last = global_rows(q.narrow(2, padded - bs, bs), k, v, key_ok, dense.defined() ? &p_last : nullptr);
      auto middle = sparse_rows(q, k, v, key_ok, bs, nb, dense);
      if (dense.defined()) {
        dense.narrow(2, 0, bs).copy_(p_first);
        dense.narrow(2, padded - bs, bs).copy_(p_last);
      }
      out = at::cat({first, middle, last}, 2);
    }
    if (record_attention_) last_attention_ = dense.narrow(2, 0, L).narrow(3, 0, L);
    // LRA's BigBird multiplies the attention output by the query padding mask
    // (bigbird_attention.py:312): a padded query's output is zero (before `o`).
    if (mask_queries_) out = out * key_ok.view({B, 1, padded, 1}).to(out.scalar_type());
    return proj_->o(lra::ops::merge_heads(out.narrow(2, 0, L)));
  }

 private:
  // [B, H, L, dh] -> zero-padded to `len` positions.
  static at::Tensor pad_len(const at::Tensor& t, int64_t len) {
    return at::constant_pad_nd(t, {0, 0, 0, len - t.size(2)}, 0.0);
  }

  // Global query rows: softmax attention over every key (O(rows·L) memory).
  at::Tensor global_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_ok,
                         at::Tensor* probs) {
    return lra::ops::softmax_attention(q, k, v, key_ok, /*causal=*/false, dropout_, is_training(), probs);
  }

  // Non-global query blocks 1..nb-2 against their gathered key blocks.
  at::Tensor sparse_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_ok,
                         int64_t bs, int64_t nb, at::Tensor& dense) {
    const int64_t B = q.size(0), H = heads_, dh = q.size(3), rows = nb - 2;
    const auto pattern = make_pattern(nb, H, rand_, seed_, layer_);
    const int64_t S = pattern.blocks.size(2);
    const auto dev = q.device();
    // Flat index into the [B, H·nb, ...] view of the blocked keys.
    const auto head_base = (at::arange(H, at::TensorOptions().dtype(at::kLong)) * nb).view({H, 1, 1});
    const auto flat = (pattern.blocks + head_base).reshape({-1}).to(dev);

    auto gather = [&](const at::Tensor& t) {  // [B, H, padded, dh] -> [B, H, rows, S·bs, dh]
      return t.reshape({B, H * nb, bs, dh}).index_select(1, flat).view({B, H, rows, S * bs, dh});
    };
    auto kg = gather(k), vg = gather(v);
    // [B, H, rows, S·bs]: key is real and its slot is not a repeat.
    auto ok = key_ok.view({B, nb, bs}).index_select(1, pattern.blocks.reshape({-1}).to(dev)).view({B, H, rows, S * bs});
    auto fresh = pattern.fresh.to(dev).unsqueeze(-1).expand({H, rows, S, bs}).reshape({H, rows, S * bs});
    ok = ok.logical_and(fresh);

    auto qm = q.narrow(2, bs, rows * bs).reshape({B, H, rows, bs, dh});
    auto logits = at::matmul(qm, kg.transpose(-2, -1)).mul_(1.0 / std::sqrt(static_cast<double>(dh)));
    logits.masked_fill_(ok.logical_not().unsqueeze(-2), lra::ops::kMaskedLogit);  // [B, H, rows, bs, S·bs]
    auto probs = at::softmax(logits, -1);
    if (dense.defined()) scatter_dense(probs.detach(), pattern.blocks.to(dev), bs, nb, dense);
    probs = lra::ops::dropout(probs, dropout_, is_training());
    return at::matmul(probs, vg).reshape({B, H, rows * bs, dh});
  }

  // Writes the sparse rows' probabilities into the dense [B, H, padded, padded]
  // matrix (recording only). Masked repeat slots hold 0, so accumulating is exact.
  static void scatter_dense(const at::Tensor& probs, const at::Tensor& blocks, int64_t bs, int64_t nb,
                            at::Tensor& dense) {
    const int64_t B = probs.size(0), H = probs.size(1), rows = probs.size(2), S = blocks.size(2);
    const auto opts = blocks.options();
    auto h = at::arange(H, opts).view({H, 1, 1}).expand({H, rows, S});
    auto i = at::arange(1, nb - 1, opts).view({1, rows, 1}).expand({H, rows, S});
    // [B, H, nb, bs, nb, bs] viewed as [H, q-block, k-block, B, bs, bs]
    auto target = dense.view({B, H, nb, bs, nb, bs}).permute({1, 2, 4, 0, 3, 5});
    auto values = probs.view({B, H, rows, bs, S, bs}).permute({1, 2, 4, 0, 3, 5});
    target.index_put_({h, i, blocks}, values, /*accumulate=*/true);
  }

  int64_t heads_;
  int64_t block_;
  int64_t rand_;
  int64_t layer_;
  uint64_t seed_;
  bool mask_queries_;
  double dropout_;
  lra::QKVO proj_;
};

std::vector<lra::OptionSpec> options() {
  return {
      {"block_size", int64_t{64}, "tokens per block; the first and last block are global (LRA: 64)"},
      {"num_rand_blocks", int64_t{3},
       "random key blocks per non-global query block, per head, fixed per layer (LRA: 3)"},
      {"mask_queries", false,
       "a padded query's attention output is zero, as LRA's BigBird multiplies it by the query mask (matters "
       "where padding is pooled: MEAN over Pathfinder's masked pixels, mean_padded); false: it attends like a "
       "real query"},
  };
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& opts) {
  const int64_t block = opts.get_int("block_size"), rand_blocks = opts.get_int("num_rand_blocks");
  if (block < 1)
    throw lra::Error(lra::ErrorKind::rules, "mixer 'bigbird': block_size must be >= 1, got " + std::to_string(block));
  if (rand_blocks < 0)
    throw lra::Error(lra::ErrorKind::rules,
                     "mixer 'bigbird': num_rand_blocks must be >= 0, got " + std::to_string(rand_blocks));
  return std::make_shared<BigBirdAttention>(spec, block, rand_blocks, opts.get_bool("mask_queries"));
}

}  // namespace

LRA_MIXER_PLUGIN("bigbird", "1.0.0",
                 "BigBird block-sparse attention, ITC variant (Zaheer et al. 2020): sliding band of 3 blocks, "
                 "first/last block global, random blocks fixed per layer",
                 LRA_CAP_ATTENTION_PROBS | LRA_CAP_PADDING_MASK, options, create)
