// reformer — LSH attention (Kitaev, Kaiser & Levskaya, ICLR 2020, "Reformer: The
// Efficient Transformer"). Queries double as keys (keys are the length-normalised
// queries); positions are hashed with random rotations (angular LSH), sorted by
// (bucket, position) and cut into chunks; each chunk attends to itself and the
// previous chunk, to keys of its own bucket only. Several hash rounds are combined
// with the paper's logsumexp weighting. Memory and time are O(L * chunk_len) per
// round: no L x L tensor is ever built. README.md documents every choice.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <lra/attention.h>
#include <lra/mixer.h>

namespace {

// Logit of a query's own key (the paper forbids attending to oneself unless there is
// nothing else): far below any real logit, far above kMaskedLogit, so a query whose
// only allowed key is itself still attends to itself.
constexpr double kSelfLogit = -1e5;
// Keys are q / sqrt(|q|^2 + eps), so an all-zero query gives a zero key, not NaN.
constexpr double kNormEps = 1e-6;

struct LshOptions {
  int64_t chunk_len = 64;
  int64_t n_chunks = 0;   // > 0: chunk length floor(L / n_chunks) + 1 per forward (LRA's geometry), chunk_len unused
  int64_t n_buckets = 0;  // 0: derived per forward, 2 * number of chunks (paper: m = 2l/n_buckets)
  int64_t n_hashes = 1;
  bool attend_across_buckets = false;
};

// Sizes of one forward pass: the sequence is padded to n_chunks * chunk.
struct Geometry {
  int64_t length, chunk, n_chunks, padded, n_buckets, window;
};

// Where a set of sorted slots sits: original position, bucket and sorted index.
struct Slots {
  at::Tensor pos, bucket, rank;
};

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void require(bool ok, const std::string& message) {
  if (!ok) throw lra::Error(lra::ErrorKind::rules, "reformer: " + message);
}

class LshAttention final : public lra::Mixer {
 public:
  LshAttention(const lra::MixerSpec& spec, const LshOptions& opt)
      : heads_(spec.heads), head_dim_(spec.qkv_dim / spec.heads), causal_(spec.causal),
        dropout_(spec.attention_dropout), opt_(opt),
        proj_(register_module("proj", lra::QKVO(spec.d_model, spec.qkv_dim, /*shared_qk=*/true))) {
    require(spec.heads > 0 && spec.qkv_dim % spec.heads == 0, "qkv_dim must be divisible by heads");
    const int64_t half = rotation_columns(spec.max_len);
    if (half > 0) rotations_ = register_buffer("rotations", draw_rotations(spec, half));
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    const Geometry g = geometry(x.size(1));
    auto qk = pad_length(lra::ops::split_heads(proj_->q(x), heads_), g.padded);  // [B, H, Lp, dh]
    auto v = pad_length(lra::ops::split_heads(proj_->v(x), heads_), g.padded);
    const auto valid = padded_mask(mask, x.size(0), g, x.device());                       // [B, Lp]

    const auto buckets = hash(qk, valid, g);  // [B, H, R, Lp], by original position
    const auto order = std::get<1>((buckets * g.padded + positions(g, buckets)).sort(-1));
    const auto rank = at::empty_like(order).scatter_(-1, order, positions(g, order));

    auto [out, lse] = attend_sorted(qk, v, buckets, order, rank, g);
    auto combined = combine_rounds(out, lse).narrow(2, 0, g.length);  // [B, H, L, dh]
    return proj_->o(lra::ops::merge_heads(combined));
  }

 private:
  // Columns of the rotation matrix (n_buckets / 2); 0 when hashing is not needed.
  int64_t rotation_columns(int64_t max_len) const {
    if (opt_.n_buckets == 1) return 0;
    if (opt_.n_buckets > 0) return opt_.n_buckets / 2;
    if (opt_.n_chunks > 0) return opt_.n_chunks;  // at most n_chunks chunks at any length
    return std::max<int64_t>(1, (max_len + opt_.chunk_len - 1) / opt_.chunk_len);
  }

  // Fixed Gaussian rotations [H, R, dh, n_buckets/2], one set per head and hash round,
  // drawn from a private generator seeded by (spec.seed, layer_index): deterministic,
  // different per layer, and the global generator the host seeds is left untouched.
  at::Tensor draw_rotations(const lra::MixerSpec& spec, int64_t half) const {
    const uint64_t seed = splitmix64(spec.seed ^ splitmix64(static_cast<uint64_t>(spec.layer_index) + 1));
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    return at::randn({heads_, opt_.n_hashes, head_dim_, half}, gen, at::TensorOptions().dtype(at::kFloat));
  }

  Geometry geometry(int64_t L) const {
    Geometry g{};
    g.length = L;
    // LRA pads L to the next multiple of 10 (a whole 10 more when it is one) and cuts
    // it into 10 chunks: floor(L / 10) + 1 positions each.
    g.chunk = opt_.n_chunks > 0 ? L / opt_.n_chunks + 1 : opt_.chunk_len;
    g.n_chunks = std::max<int64_t>(1, (L + g.chunk - 1) / g.chunk);
    g.padded = g.n_chunks * g.chunk;
    if (opt_.n_buckets > 0) {
      g.n_buckets = opt_.n_buckets;
    } else {  // paper: chunk = 2 * average bucket size; capped by the rotations drawn for max_len
      g.n_buckets = 2 * std::min(g.n_chunks, rotations_.size(-1));
    }
    g.window = g.n_chunks > 1 ? 2 * g.chunk : g.chunk;  // own chunk (+ previous chunk)
    return g;
  }

  static at::Tensor pad_length(const at::Tensor& t, int64_t padded) {
    return at::constant_pad_nd(t, {0, 0, 0, padded - t.size(2)});
  }

  // True = real token; the internal padding up to a whole number of chunks is false.
  // On x's device: without a mask (a causal pass) the all-real mask is made there.
  static at::Tensor padded_mask(const at::Tensor& mask, int64_t B, const Geometry& g, const at::Device& device) {
    auto opts = at::TensorOptions().dtype(at::kBool).device(device);
    auto real = mask.defined() ? mask.to(at::kBool) : at::ones({B, g.length}, opts);
    return at::cat({real, at::zeros({B, g.padded - g.length}, opts)}, 1);
  }

  // 0..Lp-1 broadcast to like's shape (long, like's device).
  static at::Tensor positions(const Geometry& g, const at::Tensor& like) {
    return at::arange(g.padded, like.options().dtype(at::kLong)).expand(like.sizes());
  }

  // Angular LSH: bucket = argmax([xR, -xR]) per head and round. Padded/masked tokens go to
  // an extra bucket n_buckets that sorts after every real one, so where the real tokens
  // land (and therefore what they attend to) never depends on the padding's content.
  at::Tensor hash(const at::Tensor& qk, const at::Tensor& valid, const Geometry& g) const {
    const auto B = qk.size(0), Lp = qk.size(2);
    at::Tensor ids;
    if (g.n_buckets == 1) {
      ids = at::zeros({B, heads_, opt_.n_hashes, Lp}, qk.options().dtype(at::kLong));
    } else {
      auto rot = rotations_.narrow(-1, 0, g.n_buckets / 2).to(qk.options());
      auto rotated = at::matmul(qk.detach().unsqueeze(2), rot.unsqueeze(0));  // [B, H, R, Lp, nb/2]
      ids = at::cat({rotated, rotated.neg()}, -1).argmax(-1);
    }
    return ids.masked_fill(valid.logical_not().view({B, 1, 1, Lp}), g.n_buckets);
  }

  // Rows of t [B, H, Lp, dh] in the order given by idx [B, H, R, Lp] -> [B, H, R, Lp, dh].
  static at::Tensor gather_rows(const at::Tensor& t, const at::Tensor& idx) {
    const std::vector<int64_t> shape = {t.size(0), t.size(1), idx.size(2), t.size(2), t.size(3)};
    return t.unsqueeze(2).expand(shape).gather(3, idx.unsqueeze(-1).expand(shape));
  }

  // [B, H, R, Lp, ...] -> [B, H, R, n_chunks, chunk, ...]
  static at::Tensor chunked(const at::Tensor& t, const Geometry& g) {
    auto shape = t.sizes().vec();
    shape[3] = g.chunk;
    shape.insert(shape.begin() + 3, g.n_chunks);
    return t.reshape(shape);
  }

  // Keys of each chunk: the previous chunk then the chunk itself, along dim 4. Chunk 0's
  // "previous" wraps to the last chunk; is_co_located() excludes it by sorted index.
  static at::Tensor with_previous(const at::Tensor& chunks) {
    if (chunks.size(3) == 1) return chunks;
    return at::cat({chunks.roll(1, 3), chunks}, 4);
  }

  // The LSH neighbourhood of one hash round, from sorted indices and buckets: key j is in
  // query i's set iff it shares i's bucket (unless attend_across_buckets) and lies in i's
  // chunk or the one before. Causal mode instead takes the key itself plus the `chunk`
  // sorted slots before it: with same-bucket keys those are the `chunk` latest earlier
  // tokens of the bucket, a set that future tokens cannot change (chunk boundaries can).
  at::Tensor is_co_located(const at::Tensor& q_rank, const at::Tensor& k_rank, const at::Tensor& q_bucket,
                           const at::Tensor& k_bucket, int64_t chunk) const {
    at::Tensor near;
    if (causal_) {
      auto d = q_rank - k_rank;
      near = d.ge(0).logical_and(d.le(chunk));
    } else {
      auto qc = at::div(q_rank, chunk, "trunc"), kc = at::div(k_rank, chunk, "trunc");
      near = kc.eq(qc).logical_or(kc.eq(qc - 1));
    }
    return opt_.attend_across_buckets ? near : near.logical_and(q_bucket.eq(k_bucket));
  }

  // For every (query, key slot) of round r: in how many rounds r' the pair is co-located.
  // Dividing by it (subtracting its log) counts a key attended in several rounds once, so
  // the combined output is exact softmax over the union of the rounds' sets (paper §2.3).
  at::Tensor duplicate_counts(const at::Tensor& buckets, const at::Tensor& rank, const Slots& q, const Slots& k,
                              int64_t chunk) const {
    const int64_t R = buckets.size(2);
    auto in_all_rounds = [&](const at::Tensor& meta, const at::Tensor& pos) {  // -> [B, H, R', R, ...]
      auto shape = pos.sizes().vec();
      shape.insert(shape.begin() + 2, R);
      auto idx = pos.reshape({pos.size(0), pos.size(1), 1, -1}).expand({pos.size(0), pos.size(1), R, -1});
      return meta.gather(3, idx).view(shape);
    };
    auto hits = is_co_located(in_all_rounds(rank, q.pos), in_all_rounds(rank, k.pos),
                              in_all_rounds(buckets, q.pos), in_all_rounds(buckets, k.pos), chunk);
    return hits.sum(2).clamp_min(1);
  }

  // Chunked attention in sorted order; returns the output and the logsumexp of each
  // query's logits per round, both scattered back to original positions:
  // [B, H, R, Lp, dh] and [B, H, R, Lp].
  std::pair<at::Tensor, at::Tensor> attend_sorted(const at::Tensor& qk, const at::Tensor& v,
                                                  const at::Tensor& buckets, const at::Tensor& order,
                                                  const at::Tensor& rank, const Geometry& g) {
    auto sq = gather_rows(qk, order);
    auto sk = sq * at::rsqrt(sq.pow(2).sum(-1, true) + kNormEps);  // shared QK: keys = normalised queries
    auto sv = gather_rows(v, order);

    const Slots sorted{order, buckets.gather(3, order), positions(g, order)};
    auto query_side = [&](const at::Tensor& t) { return chunked(t, g).unsqueeze(-1); };        // [..., c, 1]
    auto key_side = [&](const at::Tensor& t) { return with_previous(chunked(t, g)).unsqueeze(-2); };  // [..., 1, W]
    const Slots q{query_side(sorted.pos), query_side(sorted.bucket), query_side(sorted.rank)};
    const Slots k{key_side(sorted.pos), key_side(sorted.bucket), key_side(sorted.rank)};

    auto allowed = is_co_located(q.rank, k.rank, q.bucket, k.bucket, g.chunk).logical_and(k.bucket.lt(g.n_buckets));
    if (causal_) allowed = allowed.logical_and(k.pos.le(q.pos));

    // In-place fills are safe for autograd here: matmul and subtraction do not keep
    // their outputs for backward. They keep the number of [.., c, W] copies down.
    auto scaled_q = chunked(sq, g) / std::sqrt(static_cast<double>(head_dim_));
    auto logits = at::matmul(scaled_q, with_previous(chunked(sk, g)).transpose(-2, -1));
    logits.masked_fill_(k.pos.eq(q.pos), kSelfLogit);
    if (buckets.size(2) > 1) logits = logits - duplicate_counts(buckets, rank, q, k, g.chunk).to(logits.dtype()).log();
    logits.masked_fill_(allowed.logical_not(), lra::ops::kMaskedLogit);

    auto lse = logits.logsumexp(-1, /*keepdim=*/true);
    auto probs = (logits - lse).exp_();
    probs = lra::ops::dropout(probs, dropout_, is_training());
    auto out = at::matmul(probs, with_previous(chunked(sv, g)));  // [B, H, R, nc, c, dh]

    const auto B = qk.size(0), R = order.size(2);
    auto out_sorted = out.reshape({B, heads_, R, g.padded, head_dim_});
    auto out_orig = out_sorted.gather(3, rank.unsqueeze(-1).expand(out_sorted.sizes()));
    auto lse_orig = lse.reshape({B, heads_, R, g.padded}).gather(3, rank);
    return {out_orig, lse_orig};
  }

  // Paper §2.3: o = sum_r exp(lse_r - logsumexp_r(lse_r)) * o_r.
  static at::Tensor combine_rounds(const at::Tensor& out, const at::Tensor& lse) {
    if (out.size(2) == 1) return out.squeeze(2);
    return (out * at::softmax(lse, 2).unsqueeze(-1)).sum(2);
  }

  int64_t heads_, head_dim_;
  bool causal_;
  double dropout_;
  LshOptions opt_;
  lra::QKVO proj_;
  at::Tensor rotations_;
};

std::vector<lra::OptionSpec> options() {
  return {
      {"chunk_len", int64_t{64},
       "sorted positions per chunk; each chunk attends to itself and the previous chunk (LRA cut a fixed number "
       "of chunks instead: see n_chunks)"},
      {"n_chunks", int64_t{0},
       "> 0: cut the sorted sequence into at most this many chunks of floor(L / n_chunks) + 1 positions, whatever "
       "the length, and ignore chunk_len (LRA: 10, its n_hashes x n_buckets chunks of its padded length); "
       "0 = chunks of chunk_len"},
      {"n_buckets", int64_t{0},
       "hash buckets, 1 or even; 0 = 2 x the number of chunks per forward, the paper's m = 2l/n_buckets (LRA: 10)"},
      {"n_hashes", int64_t{1}, "hash rounds, combined with the paper's logsumexp weighting (LRA: 1)"},
      {"attend_across_buckets", false,
       "also attend to keys of other buckets inside the chunk window (not allowed in causal mode)"},
  };
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& o) {
  LshOptions opt;
  opt.chunk_len = o.get_int("chunk_len");
  opt.n_chunks = o.get_int("n_chunks");
  opt.n_buckets = o.get_int("n_buckets");
  opt.n_hashes = o.get_int("n_hashes");
  opt.attend_across_buckets = o.get_bool("attend_across_buckets");
  require(opt.chunk_len >= 1, "chunk_len must be >= 1");
  require(opt.n_chunks >= 0, "n_chunks must be >= 0 (0 = chunks of chunk_len)");
  require(opt.n_hashes >= 1, "n_hashes must be >= 1");
  require(opt.n_buckets == 0 || opt.n_buckets == 1 || (opt.n_buckets >= 2 && opt.n_buckets % 2 == 0),
          "n_buckets must be 0 (derived), 1 or even (angular LSH uses argmax over [xR, -xR])");
  // Across buckets, which other-bucket keys fall in the window depends on how many
  // later tokens hashed into earlier buckets: a leak from the future.
  require(!(spec.causal && opt.attend_across_buckets), "attend_across_buckets cannot be used in causal mode");
  return std::make_shared<LshAttention>(spec, opt);
}

}  // namespace

LRA_MIXER_PLUGIN("reformer", "1.0.0",
                 "LSH attention with shared QK, sorted chunks and multi-round hashing (Kitaev et al. 2020)",
                 LRA_CAP_CAUSAL | LRA_CAP_PADDING_MASK, options, create)
