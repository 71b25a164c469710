// longformer — sliding-window attention with optional global tokens
// (Beltagy, Peters & Cohan 2020, "Longformer: The Long-Document Transformer").
//
// Query i reads the keys j with  i - (left - 1) <= j <= i + right, where for a
// total window w: left = w - w/2 (self included) and right = w/2 — the
// convention of LRA's code (w = 512: 256 to the left with self, 256 to the
// right). The first `global_tokens` positions (e.g. the CLS token) read every
// key and are read by every query.
//
// Computed blocked, never as an L×L matrix: the sequence is cut into chunks of
// c = max(left - 1, right) positions; a chunk's queries are scored against the
// keys of their own chunk and its two neighbours (a strided view, no copy),
// then the exact band is masked. Memory and time are O(L·3c) plus O(L·G) for G
// global tokens.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <lra/attention.h>
#include <lra/mixer.h>

namespace {

using lra::ops::kMaskedLogit;

class LongformerAttention final : public lra::Mixer {
 public:
  LongformerAttention(const lra::MixerSpec& spec, int64_t window, int64_t global_tokens, bool mask_queries)
      : heads_(spec.heads),
        left_(window - window / 2),
        right_(spec.causal ? 0 : window / 2),  // causal: the same band with the future removed
        global_(global_tokens),
        causal_(spec.causal),
        mask_queries_(mask_queries && !spec.causal),
        dropout_(spec.attention_dropout),
        proj_(register_module("proj", lra::QKVO(spec.d_model, spec.qkv_dim))) {}

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    const int64_t B = x.size(0), L = x.size(1);
    const auto real = mask.defined() ? mask.to(at::kBool) : at::ones({B, L}, x.options().dtype(at::kBool));
    auto q = lra::ops::split_heads(proj_->q(x), heads_);
    q = q * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));  // scale once, not per logit
    auto k = lra::ops::split_heads(proj_->k(x), heads_);
    auto v = lra::ops::split_heads(proj_->v(x), heads_);

    auto out = band_attention(q, k, v, real);
    const int64_t G = std::min(global_, L);
    if (G > 0) {
      // Global queries read the whole sequence; their rows replace the band rows.
      auto rows = global_rows(q.narrow(2, 0, G), k, v, real);
      out = at::cat({rows, out.narrow(2, G, L - G)}, 2);
    }
    // LRA computes the band as an L x L bias (longformer_attention.py:96-105):
    // band and padding both -1e10, so a padded query's row is uniform over all L keys.
    if (mask_queries_) out = lra::ops::uniform_rows_for_padded_queries(out, real, v);
    return proj_->o(lra::ops::merge_heads(out));
  }

 private:
  // Every query against its band (and the global keys). q, k, v: [B, H, L, dh].
  at::Tensor band_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& real) const {
    const int64_t B = q.size(0), H = q.size(1), L = q.size(2), dh = q.size(3);
    const int64_t c = std::min(std::max({left_ - 1, right_, int64_t{1}}), L);  // chunk length
    const int64_t nc = (L + c - 1) / c;
    const int64_t before = (nc > 1 && left_ > 1) ? c : 0;   // read the previous chunk?
    const int64_t after = (nc > 1 && right_ > 0) ? c : 0;   // read the next chunk?
    const int64_t span = before + c + after;                // keys scored per query

    // Pad the sequence with `before`/`after` empty positions so that the keys
    // of chunk t are the strided window [t·c, t·c + span) of the padded axis.
    auto windows = [&](const at::Tensor& t) {  // [B, H, L, dh] -> [B, H, nc, dh, span]
      return at::constant_pad_nd(t, {0, 0, before, nc * c - L + after}, 0.0).unfold(2, span, c);
    };
    auto qc = at::constant_pad_nd(q, {0, 0, 0, nc * c - L}, 0.0).reshape({B, H, nc, c, dh});
    auto band_logits = at::matmul(qc, windows(k));  // [B, H, nc, c, span]
    auto v_win = windows(v).transpose(-1, -2);      // [B, H, nc, span, dh]

    // Exact band, and keys that are padding (given or internal) get no weight.
    auto key_ok = at::constant_pad_nd(real, {before, nc * c - L + after}, 0).unfold(1, span, c);  // [B, nc, span]
    auto ok = band_pattern(c, span, before, q.device()).view({1, 1, c, span}).logical_and(key_ok.unsqueeze(2));
    band_logits.masked_fill_(ok.unsqueeze(1).logical_not(), kMaskedLogit);

    const int64_t G = std::min(global_, L);
    if (G == 0) {
      auto probs = dropout(at::softmax(band_logits, -1));
      return unchunk(at::matmul(probs, v_win), L);
    }
    // Every query also reads the G global keys, unless they are already in its
    // band (so that no key is counted twice). One softmax over both parts.
    auto kg = k.narrow(2, 0, G), vg = v.narrow(2, 0, G);
    auto global_logits = at::matmul(qc, kg.transpose(-2, -1).unsqueeze(2));  // [B, H, nc, c, G]
    auto g_ok = global_key_pattern(nc * c, G, q.device()).view({1, 1, nc, c, G})
                    .logical_and(real.narrow(1, 0, G).view({B, 1, 1, 1, G}));
    global_logits.masked_fill_(g_ok.logical_not(), kMaskedLogit);
    auto probs = dropout(at::softmax(at::cat({band_logits, global_logits}, -1), -1));
    auto mixed = at::matmul(probs.narrow(-1, 0, span), v_win) +
                 at::matmul(probs.narrow(-1, span, G), vg.unsqueeze(2));
    return unchunk(mixed, L);
  }

  // [c, span] "key s of the window is in the band of query r of the chunk":
  // key offset j - i = s - before - r must lie in [-(left - 1), right].
  at::Tensor band_pattern(int64_t c, int64_t span, int64_t before, const at::Device& dev) const {
    auto opts = at::TensorOptions().dtype(at::kLong).device(dev);
    auto rel = at::arange(span, opts).view({1, span}) - before - at::arange(c, opts).view({c, 1});
    return rel.ge(-(left_ - 1)).logical_and(rel.le(right_));
  }

  // [rows, G] "query i reads global key g through the global part": g is
  // outside i's band (else the band part already has it) and not in the future.
  at::Tensor global_key_pattern(int64_t rows, int64_t G, const at::Device& dev) const {
    auto opts = at::TensorOptions().dtype(at::kLong).device(dev);
    auto rel = at::arange(G, opts).view({1, G}) - at::arange(rows, opts).view({rows, 1});  // g - i
    auto ok = rel.lt(-(left_ - 1)).logical_or(rel.gt(right_));
    return causal_ ? ok.logical_and(rel.le(0)) : ok;
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

  // [B, H, nc, c, dh] -> [B, H, L, dh] (internal padding cut off)
  static at::Tensor unchunk(const at::Tensor& t, int64_t L) {
    return t.reshape({t.size(0), t.size(1), t.size(2) * t.size(3), t.size(4)}).narrow(2, 0, L);
  }

  int64_t heads_;
  int64_t left_;   // keys read to the left, self included
  int64_t right_;  // keys read to the right
  int64_t global_;
  bool causal_;
  bool mask_queries_;
  double dropout_;
  lra::QKVO proj_;
};

std::vector<lra::OptionSpec> options() {
  return {
      {"window", int64_t{512},
       "keys each query reads: window - window/2 to the left (self included) and window/2 to the right "
       "(LRA: 512 = 256 + 256); causal mode keeps only the left part"},
      {"global_tokens", int64_t{0},
       "the first N positions read every key and are read by every query (LRA: 0; 1 makes the CLS token global)"},
      {"mask_queries", false,
       "a padded query averages every value uniformly, as LRA's outer-product mask makes it (matters where "
       "padding is pooled: MEAN over Pathfinder's masked pixels, mean_padded); false: it attends like a real "
       "query. No effect in causal mode; attention dropout does not reach those rows"},
  };
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& opts) {
  const int64_t window = opts.get_int("window"), global = opts.get_int("global_tokens");
  if (window < 1)
    throw lra::Error(lra::ErrorKind::rules, "mixer 'longformer': window must be >= 1, got " + std::to_string(window));
  if (global < 0)
    throw lra::Error(lra::ErrorKind::rules,
                     "mixer 'longformer': global_tokens must be >= 0, got " + std::to_string(global));
  return std::make_shared<LongformerAttention>(spec, window, global, opts.get_bool("mask_queries"));
}

}  // namespace

LRA_MIXER_PLUGIN("longformer", "1.0.0",
                 "Sliding-window attention with optional global tokens (Beltagy et al. 2020), computed in chunks",
                 LRA_CAP_CAUSAL | LRA_CAP_PADDING_MASK, options, create)
