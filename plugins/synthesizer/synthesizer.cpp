// synthesizer — Random Synthesizer attention (Tay, Bahri, Metzler, Juan, Zhao
// and Zheng, 2020, "Synthesizer: Rethinking Self-Attention in Transformer
// Models").
//
// Each head has a synthetic logit table S [max_len, max_len] that does not
// depend on the input; its top-left L x L corner is the attention logit of
// query i for key j. With dot_product on (LRA's setting) S is ADDED to the
// usual q·k/sqrt(d) logits (the paper's "Random + Vanilla" mixture); with it
// off, S alone decides the attention and only the value and output
// projections are used. The table is one of:
//   random             a learned table, heads·max_len² parameters (LRA's variant)
//   factorized_random  a learned product R1·R2 of [max_len, k] and [k, max_len] factors
//   fixed_random       a fixed random table, no parameters (the paper's "Fixed Random")
// Attention is over the full L x L matrix: time and memory O(L²) by design.
#include <cmath>
#include <cstdint>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <lra/attention.h>
#include <lra/mixer.h>

namespace {

enum class Mode { random, factorized_random, fixed_random };

struct SynthesizerOptions {
  Mode mode = Mode::fixed_random;
  bool dot_product = true;
  int64_t k = 32;
  bool mask_queries = false;
};

// Flax's Xavier-uniform bound for a [H, rows, cols] kernel: the leading axis is
// a receptive field, so fan_in = H·rows and fan_out = H·cols. LRA initialises
// its synthetic tables this way.
double xavier_bound(int64_t heads, int64_t rows, int64_t cols) {
  return std::sqrt(6.0 / static_cast<double>(heads * (rows + cols)));
}

at::Tensor uniform_table(at::IntArrayRef shape, double bound) {
  torch::NoGradGuard g;
  return at::empty(shape).uniform_(-bound, bound);
}

// A well-mixed 64-bit seed per (run seed, layer), so every layer gets its own table.
uint64_t layer_seed(uint64_t seed, int64_t layer) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(layer + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class SynthesizerAttention final : public lra::Mixer {
 public:
  SynthesizerAttention(const lra::MixerSpec& spec, const SynthesizerOptions& o)
      : heads_(spec.heads), max_len_(spec.max_len), causal_(spec.causal), dot_product_(o.dot_product),
        mask_queries_(o.mask_queries), dropout_(spec.attention_dropout), mode_(o.mode),
        proj_(register_module("proj", lra::QKVO(spec.d_model, spec.qkv_dim))) {
    const int64_t H = heads_, N = max_len_;
    switch (mode_) {
      case Mode::random:
        table_ = register_parameter("R", uniform_table({H, N, N}, xavier_bound(H, N, N)));
        break;
      case Mode::factorized_random:
        r1_ = register_parameter("R1", uniform_table({H, N, o.k}, xavier_bound(H, N, o.k)));
        r2_ = register_parameter("R2", uniform_table({H, o.k, N}, xavier_bound(H, o.k, N)));
        break;
      case Mode::fixed_random:
        // Not a registered buffer: the table is a pure function of (seed, layer),
        // rebuilt identically on load, and registering it would put heads·max_len²
        // floats per layer (512 MB for ListOps) into every saved model. Built on
        // first use, so building a model to count its parameters (the host's
        // budget check) does not allocate it (2 GiB on Path-X).
        fixed_seed_ = layer_seed(spec.seed, spec.layer_index);
        break;
    }
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    const int64_t B = x.size(0), L = x.size(1);
    TORCH_CHECK(L <= max_len_, "synthesizer: sequence length ", L, " exceeds max_len ", max_len_,
                " (the synthetic table has max_len rows and columns)");
    auto v = lra::ops::split_heads(proj_->v(x), heads_);
    auto logits = synthetic_logits(L, x).unsqueeze(0);  // [1, H, L, L]
    if (dot_product_) {
      auto q = lra::ops::split_heads(proj_->q(x), heads_);
      auto k = lra::ops::split_heads(proj_->k(x), heads_);
      logits = logits + at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
    } else {
      logits = logits.expand({B, heads_, L, L});
    }
    return proj_->o(lra::ops::merge_heads(attend(logits, v, mask)));
  }

 private:
  static at::Tensor fixed_table(int64_t H, int64_t N, uint64_t seed) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    const double bound = xavier_bound(H, N, N);
    return at::empty({H, N, N}).uniform_(-bound, bound, gen);
  }

  // The synthetic logits of the first L positions: [H, L, L].
  at::Tensor synthetic_logits(int64_t L, const at::Tensor& like) {
    switch (mode_) {
      case Mode::random: return table_.narrow(1, 0, L).narrow(2, 0, L);
      case Mode::factorized_random: return at::matmul(r1_.narrow(1, 0, L), r2_.narrow(2, 0, L));
      case Mode::fixed_random:
        if (!table_.defined()) table_ = fixed_table(heads_, max_len_, fixed_seed_);
        // Follow the input to its device once (Module::to does not see this tensor).
        if (table_.device() != like.device() || table_.scalar_type() != like.scalar_type())
          table_ = table_.to(like.device(), like.scalar_type());
        return table_.narrow(1, 0, L).narrow(2, 0, L);
    }
    return {};
  }

  // Masked softmax over keys, attention dropout, weighted sum of the values.
  at::Tensor attend(at::Tensor logits, const at::Tensor& v, const at::Tensor& key_mask) {
    if (key_mask.defined())
      logits = logits.masked_fill(key_mask.logical_not().unsqueeze(1).unsqueeze(2), lra::ops::kMaskedLogit);
    // LRA's outer-product mask (synthesizer_attention.py:389-398): a padded
    // query's whole row is -1e10 (added to the logits, which fp32 then cannot
    // tell apart), so it averages every value uniformly.
    if (key_mask.defined() && mask_queries_ && !causal_)
      logits = logits.masked_fill(key_mask.logical_not().unsqueeze(1).unsqueeze(-1), lra::ops::kMaskedLogit);
    if (causal_)
      logits = logits.masked_fill(lra::ops::causal_allowed(logits.size(-1), logits.device()).logical_not(),
                                  lra::ops::kMaskedLogit);
    auto probs = at::softmax(logits, -1);
    if (record_attention_) last_attention_ = probs.detach();
    probs = lra::ops::dropout(probs, dropout_, is_training());
    return at::matmul(probs, v);
  }

  int64_t heads_;
  int64_t max_len_;
  bool causal_;
  bool dot_product_;
  bool mask_queries_;
  double dropout_;
  Mode mode_;
  lra::QKVO proj_;
  uint64_t fixed_seed_ = 0;  // fixed_random: the table's generator seed
  at::Tensor table_;    // random (parameter "R") or fixed_random (unregistered, built on first use): [H, max_len, max_len]
  at::Tensor r1_, r2_;  // factorized_random: [H, max_len, k] and [H, k, max_len]
};

std::vector<lra::OptionSpec> options() {
  return {
      {"mode", std::string("fixed_random"),
       "synthetic table: random (learned, heads·max_len² parameters: LRA's variant, over budget on every LRA task), "
       "factorized_random (learned R1·R2, 2·heads·max_len·k parameters), "
       "fixed_random (fixed random table, no parameters: fits every task)"},
      {"dot_product", true, "add the q·k/sqrt(d) logits to the synthetic ones (LRA: true)"},
      {"k", int64_t{32}, "rank of factorized_random (LRA: 32)"},
      {"mask_queries", false,
       "a padded query averages every value uniformly, as LRA's outer-product mask makes it (matters where "
       "padding is pooled: MEAN over Pathfinder's masked pixels, mean_padded); false: it attends like a real "
       "query. No effect in causal mode"},
  };
}

SynthesizerOptions read_options(const lra::ParamReader& r) {
  SynthesizerOptions o;
  const std::string mode = r.get_string("mode");
  if (mode == "random") o.mode = Mode::random;
  else if (mode == "factorized_random") o.mode = Mode::factorized_random;
  else if (mode == "fixed_random") o.mode = Mode::fixed_random;
  else
    throw lra::Error(lra::ErrorKind::rules, "synthesizer: mode must be random, factorized_random or fixed_random, got '" +
                                                mode + "'");
  o.dot_product = r.get_bool("dot_product");
  o.k = r.get_int("k");
  o.mask_queries = r.get_bool("mask_queries");
  if (o.k < 1) throw lra::Error(lra::ErrorKind::rules, "synthesizer: k must be >= 1, got " + std::to_string(o.k));
  return o;
}

std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& r) {
  return std::make_shared<SynthesizerAttention>(spec, read_options(r));
}

}  // namespace

LRA_MIXER_PLUGIN("synthesizer", "1.0.0",
                 "Random Synthesizer (Tay et al. 2020): per-head synthetic L x L logits, added to dot-product "
                 "attention as in LRA; O(L²)",
                 LRA_CAP_CAUSAL | LRA_CAP_ATTENTION_PROBS | LRA_CAP_PADDING_MASK, options, create)
