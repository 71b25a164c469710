// sparse_transformer — the "fixed" sparse attention pattern of Child, Gray,
// Radford & Sutskever 2019, "Generating Long Sequences with Sparse
// Transformers", as LRA uses it: the union of
//   Fixed1: query i reads the keys of its own block of `block_size` positions;
//   Fixed2: every query reads the "summary" keys, the positions j with
//           j mod block_size >= block_size - c (and, as in LRA's code, also
//           j mod block_size == 0, see option block_start_summary).
// LRA applies both patterns causally even in its bidirectional encoder; here
// the bidirectional mode reads the summary keys of every block and only causal
// mode restricts the pattern to j <= i. The first `global_tokens` positions
// (LRA: the CLS token) read every key and are read by every query; the block
// pattern starts after them, as LRA's use_cls_token shift does.
//
// Computed blocked, never as an L×L matrix:
//  * own block: logits [.., nblocks, block, block], plain autograd;
//  * keys shared by all blocks (summary + global keys, S ≈ L·(c+1)/block of
//    them): a custom autograd function that walks the queries in chunks and
//    recomputes each chunk in backward, so no [L, S] tensor outlives a chunk;
//  * the two softmaxes are merged exactly through their log-sum-exps.
// Time O(L·(block + S)·dh) (the pattern's own cost: S grows with L at a fixed
// block), memory O(L·(block + dh)) plus one chunk.
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <lra/attention.h>
#include <lra/mixer.h>
#include <torch/csrc/autograd/custom_function.h>

namespace {

using lra::ops::kMaskedLogit;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A private generator for attention dropout: seeded from the global one in
// forward and re-created from the same seed in backward, so the recomputed
// dropout masks equal the forward ones. On CPU a fresh generator: in LibTorch
// 1.13 Generator::clone() never frees its copy (GeneratorImpl::clone leaves the
// weak count at 0; LeakSanitizer finds it), and a fresh CPU generator seeded
// with `seed` draws exactly what a seeded clone would.
at::Generator dropout_generator(const at::Device& device, uint64_t seed) {
  if (device.is_cpu()) return at::detail::createCPUGenerator(seed);
  at::Generator global = at::globalContext().defaultGenerator(device);
  at::Generator g;
  {
    std::lock_guard<std::mutex> lock(global.mutex());
    g = global.clone();
  }
  g.set_current_seed(seed);
  return g;
}

// Softmax attention of blocked queries against keys that every block shares
// (with a per-block, per-example key mask), flash-attention style in plain
// ATen ops: forward keeps only the output and the log-sum-exp of each row;
// backward recomputes the probabilities chunk by chunk.
//   q [B, H, nb·b, dh] (already scaled), k [B, H, n, dh], v [B, H, n, dv],
//   ok [B|1, 1, nb, n] bool (key usable by the queries of that block);
//   chunk: elements of [B, H, rows, n] logits to process at once (>= one block).
// Returns {out [B, H, nb·b, dv], lse [B, H, nb·b, 1]}.
class SharedKeyAttention : public torch::autograd::Function<SharedKeyAttention> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& ok, int64_t block, int64_t chunk, double dropout, int64_t seed,
                               int64_t first, int64_t local, int64_t global, int64_t towers, bool in_pass) {
    const int64_t nb = ok.size(2);
    const int64_t per_chunk = std::max<int64_t>(1, chunk / (q.size(0) * q.size(1) * block * k.size(2)));
    auto out = at::empty({q.size(0), q.size(1), q.size(2), v.size(3)}, v.options());
    auto lse = at::empty({q.size(0), q.size(1), q.size(2), 1}, q.options());
    const lra::ops::DropoutKey key{static_cast<uint64_t>(seed), first, local, global, towers, in_pass};
    at::Generator gen;
    if (dropout > 0.0 && !q.device().is_cpu()) gen = dropout_generator(q.device(), key.seed);
    for (int64_t t0 = 0; t0 < nb; t0 += per_chunk) {
      const int64_t t1 = std::min(nb, t0 + per_chunk), r0 = t0 * block, rows = (t1 - t0) * block;
      auto logits = chunk_logits(q, k, ok, t0, t1, block);
      auto lse_c = at::logsumexp(logits, {-1}, /*keepdim=*/true);
      auto p = logits.sub_(lse_c).exp_();
      if (dropout > 0.0) p.mul_(dropout_mask(p, dropout, key, gen, t0, t1));
      out.narrow(2, r0, rows).copy_(at::matmul(p, v));
      lse.narrow(2, r0, rows).copy_(lse_c);
    }
    ctx->save_for_backward({q, k, v, ok, out, lse});
    ctx->saved_data["block"] = block;
    ctx->saved_data["dropout"] = dropout;
    ctx->saved_data["seed"] = seed;
    ctx->saved_data["first"] = first;
    ctx->saved_data["local"] = local;
    ctx->saved_data["global"] = global;
    ctx->saved_data["towers"] = towers;
    ctx->saved_data["in_pass"] = in_pass;
    ctx->saved_data["per_chunk"] = per_chunk;
    return {out, lse};
  }

  // With P = softmax(S), O = (P∘Z)V (Z: scaled dropout mask), lse = logsumexp(S):
  // dS = P∘(Z∘(dO·Vᵀ) − rowsum(dO∘O) + dlse); dQ = dS·K, dK = dSᵀ·Q, dV = (P∘Z)ᵀ·dO.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &ok = saved[3], &out = saved[4], &lse = saved[5];
    const int64_t block = ctx->saved_data["block"].toInt(), per_chunk = ctx->saved_data["per_chunk"].toInt();
    const double dropout = ctx->saved_data["dropout"].toDouble();
    auto d_out = grads[0].defined() ? grads[0] : at::zeros_like(out);
    auto d_lse = grads[1].defined() ? grads[1] : at::zeros_like(lse);
    auto rowdot = (d_out * out).sum(-1, /*keepdim=*/true);  // rowsum(dO∘O)
    auto dq = at::empty_like(q), dk = at::zeros_like(k), dv = at::zeros_like(v);
    const auto& sd = ctx->saved_data;
    const lra::ops::DropoutKey key{static_cast<uint64_t>(sd.at("seed").toInt()), sd.at("first").toInt(),
                                   sd.at("local").toInt(), sd.at("global").toInt(), sd.at("towers").toInt(),
                                   sd.at("in_pass").toBool()};
    at::Generator gen;
    if (dropout > 0.0 && !q.device().is_cpu()) gen = dropout_generator(q.device(), key.seed);
    const int64_t nb = ok.size(2);
    for (int64_t t0 = 0; t0 < nb; t0 += per_chunk) {
      const int64_t t1 = std::min(nb, t0 + per_chunk), r0 = t0 * block, rows = (t1 - t0) * block;
      auto p = chunk_logits(q, k, ok, t0, t1, block).sub_(lse.narrow(2, r0, rows)).exp_();
      auto d_out_c = d_out.narrow(2, r0, rows);
      auto g = at::matmul(d_out_c, v.transpose(-2, -1));  // dO·Vᵀ
      if (dropout > 0.0) {
        auto z = dropout_mask(p, dropout, key, gen, t0, t1);  // same draws, same order as forward
        g.mul_(z);
        dv.add_(at::matmul((p * z).transpose(-2, -1), d_out_c));
      } else {
        dv.add_(at::matmul(p.transpose(-2, -1), d_out_c));
      }
      auto ds = g.sub_(rowdot.narrow(2, r0, rows)).add_(d_lse.narrow(2, r0, rows)).mul_(p);
      mask_chunk(ds, ok, t0, t1, block, 0.0);  // masked logits were constants
      auto q_c = q.narrow(2, r0, rows);
      dq.narrow(2, r0, rows).copy_(at::matmul(ds, k));
      dk.add_(at::matmul(ds.transpose(-2, -1), q_c));
    }
    return {dq, dk, dv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }

 private:
  // Logits of the queries of blocks [t0, t1): [B, H, rows, n], masked keys at kMaskedLogit.
  static at::Tensor chunk_logits(const at::Tensor& q, const at::Tensor& k, const at::Tensor& ok, int64_t t0,
                                 int64_t t1, int64_t block) {
    auto logits = at::matmul(q.narrow(2, t0 * block, (t1 - t0) * block), k.transpose(-2, -1));
    mask_chunk(logits, ok, t0, t1, block, kMaskedLogit);
    return logits;
  }

  static void mask_chunk(at::Tensor& t, const at::Tensor& ok, int64_t t0, int64_t t1, int64_t block, double value) {
    const int64_t n = t.size(-1);
    auto blocked = t.view({t.size(0), t.size(1), t1 - t0, block, n});
    blocked.masked_fill_(ok.narrow(2, t0, t1 - t0).unsqueeze(3).logical_not(), value);
  }

  // The mask of the chunk of blocks [t0, t1), like [B, H, rows, n]. On the CPU
  // each block's mask is keyed by the call's key, the block and each
  // example's index in the global batch, so neither the chunking (which
  // depends on the batch size) nor the split over ranks changes it
  // (lra/dropout.h); elsewhere the device generator's draws, chunk by chunk.
  static at::Tensor dropout_mask(const at::Tensor& like, double p, const lra::ops::DropoutKey& key,
                                 at::Generator& gen, int64_t t0, int64_t t1) {
    if (!like.device().is_cpu()) return at::empty_like(like).bernoulli_(1.0 - p, gen).div_(1.0 - p);
    const int64_t block = like.size(2) / (t1 - t0);
    std::vector<at::Tensor> parts;
    for (int64_t t = t0; t < t1; ++t)
      parts.push_back(lra::ops::keyed_dropout_mask({like.size(0), like.size(1), block, like.size(3)},
                                                   like.options(), p, key.part(static_cast<uint64_t>(t))));
    return parts.size() == 1 ? parts[0] : at::cat(parts, 2);
  }
};

struct Pattern {
  int64_t block;
  int64_t c;
  bool block_start;  // position 0 of each block is a summary key too (LRA's Fixed2)
  int64_t global;
  int64_t chunk;     // elements per recomputation chunk (memory/speed only)
  bool mask_queries;  // a padded query's row uniform over all keys (LRA's outer-product mask)
};

class SparseAttention final : public lra::Mixer {
 public:
  SparseAttention(const lra::MixerSpec& spec, const Pattern& p)
      : heads_(spec.heads), pattern_(p), causal_(spec.causal), dropout_(spec.attention_dropout),
        proj_(register_module("proj", lra::QKVO(spec.d_model, spec.qkv_dim))) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    const int64_t B = x.size(0), L = x.size(1);
    const auto real = mask.defined() ? mask.to(at::kBool) : at::ones({B, L}, x.options().dtype(at::kBool));
    auto q = lra::ops::split_heads(proj_->q(x), heads_);
    q = q * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));  // scale once, not per logit
    auto k = lra::ops::split_heads(proj_->k(x), heads_);
    auto v = lra::ops::split_heads(proj_->v(x), heads_);

    const int64_t G = std::min(pattern_.global, L);
    std::vector<at::Tensor> parts;
    if (G > 0) parts.push_back(global_rows(q.narrow(2, 0, G), k, v, real));
    if (G < L) parts.push_back(patterned_rows(q, k, v, real, G));
    auto out = parts.size() == 1 ? parts[0] : at::cat(parts, 2);
    // LRA computes the pattern as an L x L bias (sparse_attention.py:201-210):
    // pattern and padding both -1e10, so a padded query's row is uniform over all L keys.
    if (pattern_.mask_queries && !causal_) out = lra::ops::uniform_rows_for_padded_queries(out, real, v);
    return proj_->o(lra::ops::merge_heads(out));
  }

 private:
  // Queries G..L-1 read their own block (Fixed1), the summary keys of the other
  // blocks (Fixed2) and the global keys, under one softmax.
  // q, k, v: [B, H, L, dh]; returns [B, H, L - G, dh].
  at::Tensor patterned_rows(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& real,
                            int64_t G) const {
    const int64_t B = q.size(0), H = q.size(1), L = q.size(2), dh = q.size(3);
    const int64_t M = L - G;                        // patterned positions
    const int64_t b = std::min(pattern_.block, M);  // one block if the sequence is shorter
    const int64_t nb = (M + b - 1) / b;
    const int64_t pad = nb * b - M;
    auto blocks = [&](const at::Tensor& t) {  // [B, H, L, dh] -> [B, H, nb, b, dh]
      return at::constant_pad_nd(t.narrow(2, G, M), {0, 0, 0, pad}, 0.0).reshape({B, H, nb, b, dh});
    };
    auto qb = blocks(q);
    auto real_p = real.narrow(1, G, M);

    // Fixed1: own block. Padding keys (given or internal) get no weight.
    auto own = at::matmul(qb, blocks(k).transpose(-2, -1));  // [B, H, nb, b, b]
    own.masked_fill_(at::constant_pad_nd(real_p, {0, pad}, 0).view({B, 1, nb, 1, b}).logical_not(), kMaskedLogit);
    if (causal_) own.masked_fill_(lra::ops::causal_allowed(b, q.device()).logical_not(), kMaskedLogit);
    auto own_lse = at::logsumexp(own, {-1}, /*keepdim=*/true);
    auto own_out = at::matmul(dropout(at::softmax(own, -1)), blocks(v));  // [B, H, nb, b, dh]

    at::Tensor ks, vs, ok;
    shared_keys(k, v, real, G, nb, ks, vs, ok);
    if (ks.size(2) > 0) {
      // Merge the two softmaxes exactly: weights exp(lse_part - lse_all).
      const bool drop = dropout_ > 0.0 && is_training();
      const lra::ops::DropoutKey key = drop ? lra::ops::next_dropout_key() : lra::ops::DropoutKey{};
      auto res = SharedKeyAttention::apply(qb.reshape({B, H, nb * b, dh}), ks, vs, ok, b, pattern_.chunk,
                                           drop ? dropout_ : 0.0, static_cast<int64_t>(key.seed), key.first,
                                           key.local, key.global, key.towers, key.in_pass);
      auto shared_out = res[0].view({B, H, nb, b, dh});
      auto shared_lse = res[1].view({B, H, nb, b, 1});
      auto lse = at::logaddexp(own_lse, shared_lse);
      own_out = (own_lse - lse).exp() * own_out + (shared_lse - lse).exp() * shared_out;
    }
    return own_out.reshape({B, H, nb * b, dh}).narrow(2, 0, M);
  }

  // Keys every block reads besides its own: the G global keys, then the
  // summary keys (Fixed2) of the patterned part. ok [B, 1, nb, n] says which
  // of them a block may read: not padding; a summary key only from another
  // block (its own block already has it), an earlier one in causal mode.
  void shared_keys(const at::Tensor& k, const at::Tensor& v, const at::Tensor& real, int64_t G, int64_t nb,
                   at::Tensor& ks, at::Tensor& vs, at::Tensor& ok) const {
    const int64_t B = k.size(0), M = k.size(2) - G;
    auto idx = summary_positions(nb > 1 ? M : 0, k.device());  // patterned coordinates
    const int64_t S = idx.size(0);
    auto key_block = idx.div(pattern_.block, "floor").view({1, S});
    auto query_block = at::arange(nb, idx.options()).view({nb, 1});
    auto summary_ok = (causal_ ? key_block.lt(query_block) : key_block.ne(query_block)).view({1, 1, nb, S});
    summary_ok = summary_ok.logical_and(real.narrow(1, G, M).index_select(1, idx).view({B, 1, 1, S}));
    auto global_ok = real.narrow(1, 0, G).view({B, 1, 1, G}).expand({B, 1, nb, G});  // all come earlier
    ok = at::cat({global_ok, summary_ok}, -1);
    ks = at::cat({k.narrow(2, 0, G), k.narrow(2, G, M).index_select(2, idx)}, 2);
    vs = at::cat({v.narrow(2, 0, G), v.narrow(2, G, M).index_select(2, idx)}, 2);
  }

  // Summary positions among M patterned ones: j mod block >= block - c, or
  // j mod block == 0 when block_start_summary is on.
  at::Tensor summary_positions(int64_t M, const at::Device& dev) const {
    auto pos = at::arange(M, at::TensorOptions().dtype(at::kLong).device(dev));
    auto r = pos.remainder(pattern_.block);
    auto is_summary = r.ge(pattern_.block - pattern_.c);
    if (pattern_.block_start) is_summary = is_summary.logical_or(r.eq(0));
    return pos.masked_select(is_summary);
  }

  // Global queries [B, H, G, dh] against all L keys (padding and causality masked).
  at::Tensor global_rows(const at::Tensor& qg, const at::Tensor& k, const at::Tensor& v,
                         const at::Tensor& real) const {
    auto logits = at::matmul(qg, k.transpose(-2, -1));  // [B, H, G, L]
    logits.masked_fill_(real.logical_not().view({real.size(0), 1, 1, real.size(1)}), kMaskedLogit);
    if (causal_) {
      auto opts = at::TensorOptions().dtype(at::kLong).device(qg.device());
      auto future = at::arange(k.size(2), opts).view({1, -1}).gt(at::arange(qg.size(2), opts).view({-1, 1}));
      logits.masked_fill_(future, kMaskedLogit);
    }
    return at::matmul(dropout(at::softmax(logits, -1)), v);
  }

  at::Tensor dropout(const at::Tensor& probs) const {
    return lra::ops::dropout(probs, dropout_, is_training());
  }

  int64_t heads_;
  Pattern pattern_;
  bool causal_;
  double dropout_;
  lra::QKVO proj_;
};

std::vector<lra::OptionSpec> options() {
  return {
      {"block_size", int64_t{50}, "Fixed1: each query reads its own block of this many positions (LRA: 50)"},
      {"c", int64_t{10}, "Fixed2: the last c positions of every block are summary keys read by all queries (LRA: 10)"},
      {"block_start_summary", true,
       "Fixed2 also counts each block's first position as a summary key (LRA's code: key mod block == 0)"},
      {"global_tokens", int64_t{1},
       "the first N positions read every key and are read by every query; the block pattern starts after "
       "them (LRA: 1, its CLS-token handling; 0 = pure pattern)"},
      {"chunk_elements", int64_t{1} << 22,
       "queries are processed against the shared summary keys in chunks of about this many logits "
       "(16 MiB in float32), recomputed in backward; changes memory and speed, not results"},
      {"mask_queries", false,
       "a padded query averages every value uniformly, as LRA's outer-product mask makes it (matters where "
       "padding is pooled: MEAN over Pathfinder's masked pixels, mean_padded); false: it attends like a real "
       "query. No effect in causal mode; attention dropout does not reach those rows"},
  };
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& opts) {
  Pattern p{opts.get_int("block_size"), opts.get_int("c"), opts.get_bool("block_start_summary"),
            opts.get_int("global_tokens"), opts.get_int("chunk_elements"), opts.get_bool("mask_queries")};
  auto fail = [](const std::string& what) {
    throw lra::Error(lra::ErrorKind::rules, "mixer 'sparse_transformer': " + what);
  };
  if (p.block < 1) fail("block_size must be >= 1, got " + std::to_string(p.block));
  if (p.c < 0 || p.c > p.block) fail("c must be in [0, block_size], got " + std::to_string(p.c));
  if (p.global < 0) fail("global_tokens must be >= 0, got " + std::to_string(p.global));
  if (p.chunk < 1) fail("chunk_elements must be >= 1, got " + std::to_string(p.chunk));
  return std::make_shared<SparseAttention>(spec, p);
}

}  // namespace

LRA_MIXER_PLUGIN("sparse_transformer", "1.0.0",
                 "Sparse Transformer fixed pattern (Child et al. 2019): own block + summary columns, computed blocked",
                 LRA_CAP_CAUSAL | LRA_CAP_PADDING_MASK, options, create)
