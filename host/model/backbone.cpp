#include "model/backbone.h"

#include <cmath>

#include <torch/nn/init.h>

#include "lra/attention.h"
#include "lra/task.h"
#include "model/mixer_call.h"
#include "model/short_conv.h"

namespace lra::host {
namespace {

constexpr double kLayerNormEps = 1e-6;  // Flax default, as in LRA (PyTorch's is 1e-5)

torch::nn::LayerNorm layer_norm(int64_t d) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(kLayerNormEps));
}

// LRA feed-forward layers: Xavier-uniform kernels, biases N(0, 1e-6).
torch::nn::Linear mlp_dense(int64_t in, int64_t out) {
  torch::nn::Linear l(in, out);
  torch::NoGradGuard g;
  torch::nn::init::xavier_uniform_(l->weight);
  l->bias.normal_(0.0, 1e-6);
  return l;
}

// Flax's default Dense init for the classifier head: LeCun-normal kernel, zero
// bias. (Flax truncates the normal at 2 sigma; a plain normal is used here.)
torch::nn::Linear head_dense(int64_t in, int64_t out) {
  torch::nn::Linear l(in, out);
  torch::NoGradGuard g;
  l->weight.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(in)));
  l->bias.zero_();
  return l;
}

class ReferenceAttention final : public lra::Mixer {
 public:
  explicit ReferenceAttention(const lra::MixerSpec& s)
      : heads_(s.heads), causal_(s.causal), dropout_(s.attention_dropout), rotary_base_(s.rotary_base),
        proj_(register_module("proj", lra::QKVO(s.d_model, s.qkv_dim))) {}
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    return lra::ops::multi_head_attention(*proj_, x, mask, heads_, causal_, dropout_, is_training(), nullptr,
                                          rotary_base_);
  }

 private:
  int64_t heads_;
  bool causal_;
  double dropout_;
  double rotary_base_;
  lra::QKVO proj_;
};

}  // namespace

std::shared_ptr<lra::Mixer> make_reference_attention(const lra::MixerSpec& spec) {
  return std::make_shared<ReferenceAttention>(spec);
}

torch::Tensor sinusoidal_positions(int64_t max_len, int64_t d) {
  auto pos = torch::arange(max_len, torch::kDouble).unsqueeze(1);
  auto i = torch::arange(0, d, 2, torch::kDouble);
  auto div = torch::exp(i * (-std::log(10000.0) / static_cast<double>(d)));
  auto pe = torch::zeros({max_len, d}, torch::kDouble);
  pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)},
                torch::sin(pos * div));
  pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)},
                torch::cos(pos * div).narrow(1, 0, d / 2));
  return pe.to(torch::kFloat);
}

BackboneSpec backbone_spec(const ModelConfig& m, const lra::Dataset& data, uint64_t seed) {
  BackboneSpec spec{m, data.info.vocab_size, data.info.num_classes, seed, data.info.paired};
  if (data.is_sequence_task()) {
    spec.num_classes = data.sequence.num_classes;
    spec.per_position = true;
    spec.summary = SummaryPosition::every_position;
    spec.readout = data.sequence.readout;
  }
  return spec;
}

int64_t encoder_positions(const ModelConfig& m) { return m.max_len + (m.pooling == "cls" ? 1 : 0); }

lra::MixerSpec mixer_spec(const ModelConfig& m, int64_t max_len, int64_t layer, uint64_t seed) {
  lra::MixerSpec ms;
  ms.d_model = m.d_model;
  ms.heads = m.heads;
  ms.qkv_dim = qkv_width(m);
  ms.max_len = max_len;
  ms.attention_dropout = m.attention_dropout;
  ms.layer_index = layer;
  ms.seed = seed;
  return ms;
}

int64_t count_parameters(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

BlockImpl::BlockImpl(const ModelConfig& m, std::shared_ptr<lra::Mixer> mx) : mixer(std::move(mx)) {
  register_module("mixer", mixer);
  ln_mix = register_module("ln_mix", layer_norm(m.d_model));
  if (m.ffn_dim > 0) {  // 0: the block is its mixer alone (sequence tasks; Zoology's Identity state mixer)
    ln_ffn = register_module("ln_ffn", layer_norm(m.d_model));
    fc1 = register_module("fc1", mlp_dense(m.d_model, m.ffn_dim));
    fc2 = register_module("fc2", mlp_dense(m.ffn_dim, m.d_model));
  }
  dropout_ = m.dropout;
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const auto in = ln_mix(x);
  if (capture_) {
    captured_input_ = in.detach();
    captured_mask_ = mask;
  }
  auto mixed = call_mixer(*mixer, in, mask);  // faults named: plugin, call, step
  auto h = x + drop(mixed);
  if (!fc1) return h;
  // jax.nn.gelu defaults to the tanh approximation.
  auto f = drop(fc2(drop(torch::gelu(fc1(ln_ffn(h)), "tanh"))));
  return h + f;
}

ClassifierImpl::ClassifierImpl(const BackboneSpec& spec, const MixerFactory& make_mixer)
    : spec_(spec), use_cls_(spec.model.pooling == "cls" && !spec.per_position) {
  const auto& m = spec.model;
  const int64_t positions = encoder_positions(m);
  embed = register_module("embed", torch::nn::Embedding(spec.vocab_size, m.d_model));
  {
    torch::NoGradGuard g;
    embed->weight.normal_(0.0, 1.0);  // LRA: N(0, 1), no sqrt(d) scaling
  }
  if (use_cls_) cls_ = register_parameter("cls", torch::zeros({m.d_model}));
  if (m.positions == "learned") {
    learned_pos_ = register_parameter("pos", torch::randn({positions, m.d_model}) * 0.02);
  } else if (m.positions == "sinusoidal") {
    sinusoid_ = register_buffer("pos", sinusoidal_positions(positions, m.d_model));
  }  // "rotary": the mixers rotate queries and keys (MixerSpec::rotary_base); "none": no positions at all
  dropout_ = m.dropout;
  for (int64_t i = 0; i < m.layers; ++i) {
    lra::MixerSpec ms = mixer_spec(m, positions, i, spec.seed);
    if (m.positions == "rotary") ms.rotary_base = kClassifierRotaryBase;
    ms.causal = spec.per_position;
    auto mixer = is_short_conv_block(m.short_conv, i) ? make_gated_short_conv(ms, m.short_conv) : make_mixer(ms);
    blocks_.push_back(register_module("block" + std::to_string(i), Block(m, std::move(mixer))));
  }
  final_ln = register_module("final_ln", layer_norm(m.d_model));
  if (spec.from_last_state()) {
    // MAD's AutoEncoder: every position decoded from the example's last state.
    decoder_ = register_module("decoder", LastStateDecoder(m.d_model, spec.num_classes, positions));
  } else if (spec.per_position) {
    // A language model's head: one linear map at every position (untied, see docs/suites.md).
    head1 = register_module("head1", head_dense(m.d_model, spec.num_classes));
  } else if (spec.paired) {
    // LRA's classifier_head_dual: [u, v] -> mlp -> ReLU -> mlp/2 -> ReLU -> classes.
    head1 = register_module("head1", head_dense(2 * m.d_model, m.ffn_dim));
    head2 = register_module("head2", head_dense(m.ffn_dim, m.ffn_dim / 2));
    head3 = register_module("head3", head_dense(m.ffn_dim / 2, spec.num_classes));
  } else {
    head1 = register_module("head1", head_dense(m.d_model, m.ffn_dim));
    head2 = register_module("head2", head_dense(m.ffn_dim, spec.num_classes));
  }
}

torch::Tensor ClassifierImpl::key_mask(const torch::Tensor& ids, const torch::Tensor& mask) const {
  if (spec_.model.padding_mask == "nonzero_tokens") return mask.logical_and(ids.gt(0));
  return mask;
}

ClassifierImpl::EncoderStates ClassifierImpl::run_encoder(const torch::Tensor& ids, const torch::Tensor& length_mask,
                                                          const torch::Tensor& replaced,
                                                          const torch::Tensor& replacement) {
  // `length_mask` marks the example's positions; `mask` is what the mixers see
  // (LRA quirk Q1 under padding_mask = "nonzero_tokens": pixel 0 is padding).
  auto mask = key_mask(ids, length_mask);
  auto x = embed(ids);
  if (replaced.defined()) {
    mask = mask.logical_or(replaced);
    x = torch::where(replaced.unsqueeze(-1), replacement.view({1, 1, -1}).to(x.dtype()), x);
  }
  EncoderStates out;
  // A mixer that does not read ahead (rules/summary_position.h): the summary
  // is read right after the example's last real token, which has seen it all;
  // padding comes after it. Examples are padded at the end, so that index is
  // the example's length.
  const bool after_last = spec_.summary == SummaryPosition::after_last;
  if (after_last) out.lengths = length_mask.sum(1);  // [B]
  if (use_cls_ && after_last) {
    const auto slot = torch::arange(ids.size(1) + 1, out.lengths.options()).unsqueeze(0).eq(out.lengths.unsqueeze(1));
    x = torch::cat({x, torch::zeros_like(x.narrow(1, 0, 1))}, 1);
    x = torch::where(slot.unsqueeze(-1), cls_.view({1, 1, -1}).to(x.dtype()), x);
    mask = torch::cat({mask, torch::zeros_like(mask.narrow(1, 0, 1))}, 1).logical_or(slot);
  } else if (use_cls_) {
    auto B = ids.size(0);
    x = torch::cat({cls_.view({1, 1, -1}).expand({B, 1, cls_.size(0)}), x}, 1);
    // LRA copies the first position's mask entry to the CLS token, so under
    // "nonzero_tokens" an image starting with a black pixel has a masked CLS.
    // With length masks the first position is always real: CLS stays a key.
    mask = torch::cat({mask.narrow(1, 0, 1), mask}, 1);
    out.token_offset = 1;
  }
  const auto L = x.size(1);
  if (learned_pos_.defined() || sinusoid_.defined())
    x = x + (learned_pos_.defined() ? learned_pos_ : sinusoid_).narrow(0, 0, L).unsqueeze(0);
  x = drop(x);
  for (auto& b : blocks_) x = b->forward(x, mask);
  out.x = final_ln(x);
  return out;
}

torch::Tensor ClassifierImpl::token_states(const torch::Tensor& ids, const torch::Tensor& mask,
                                           const torch::Tensor& replaced, const torch::Tensor& replacement) {
  // With an after_last summary the CLS slot sits right after each example's
  // last token, so positions before it are the tokens themselves.
  const EncoderStates s = run_encoder(ids, mask, replaced, replacement);
  return s.x.narrow(1, s.token_offset, ids.size(1));
}

torch::Tensor ClassifierImpl::encode(const torch::Tensor& ids, const torch::Tensor& length_mask) {
  const EncoderStates s = run_encoder(ids, length_mask, {}, {});
  const auto& x = s.x;
  const bool after_last = spec_.summary == SummaryPosition::after_last;
  // "cls" reads the inserted CLS position; "first" the first real token (LRA's
  // two-tower model pools "CLS" without inserting one).
  if (after_last && (use_cls_ || spec_.model.pooling == "first")) {
    const auto at = use_cls_ ? s.lengths : (s.lengths - 1).clamp_min(0);
    return x.gather(1, at.view({-1, 1, 1}).expand({x.size(0), 1, x.size(2)})).squeeze(1);
  }
  if (use_cls_ || spec_.model.pooling == "first") return x.select(1, 0);
  // "mean_padded" is LRA's MEAN: over every position, padding included (the
  // LRA Table 1 configuration of sinkhorn on ListOps uses it).
  if (spec_.model.pooling == "mean_padded") return x.mean(1);
  // Mean over the example's positions: masked pixels count, as in LRA (on the
  // image tasks every position is in the example). Length padding is left out;
  // LRA averaged over it too (deviation, docs/deviations.md).
  auto w = length_mask.to(x.dtype()).unsqueeze(-1);
  return (x * w).sum(1) / w.sum(1).clamp_min(1.0);
}

torch::Tensor ClassifierImpl::scored_logits(const torch::Tensor& ids, const torch::Tensor& mask,
                                            const torch::Tensor& targets) {
  TORCH_CHECK(spec_.per_position, "scored_logits: not a per-position model");
  const auto x = token_states(ids, mask);  // [B, L, D]
  const auto scored = targets.ne(lra::kIgnoreTarget);
  if (!decoder_) return head1(x.index({scored}));
  // Row-major like the boolean index: (example, position) of each scored target.
  const auto at = scored.nonzero();
  return decoder_(last_states(x, mask).index_select(0, at.select(1, 0)), at.select(1, 1));
}

std::vector<std::shared_ptr<lra::Mixer>> ClassifierImpl::mixers() const {
  std::vector<std::shared_ptr<lra::Mixer>> out;
  for (const auto& b : blocks_) out.push_back(b->mixer);
  return out;
}

torch::Tensor ClassifierImpl::forward(const torch::Tensor& ids, const torch::Tensor& mask, const torch::Tensor& ids2,
                                      const torch::Tensor& mask2) {
  if (spec_.from_last_state())  // every position 0..L-1 of every example, from its last state
    return decoder_(last_states(token_states(ids, mask), mask).unsqueeze(1),
                    torch::arange(ids.size(1), ids.options().dtype(torch::kLong)));
  if (spec_.per_position) return head1(token_states(ids, mask));
  if (!spec_.paired) return head2(torch::relu(head1(encode(ids, mask))));
  TORCH_CHECK(ids2.defined() && mask2.defined(), "a paired model needs both inputs");
  // Both towers share the encoder; one pass over the stacked inputs.
  const auto B = ids.size(0);
  torch::Tensor pooled;
  {
    const lra::ops::DropoutTowers towers(2);  // dropout rows: tower-major, [ids; ids2]
    pooled = encode(torch::cat({ids, ids2}, 0), torch::cat({mask, mask2}, 0));
  }
  auto uv = torch::cat({pooled.narrow(0, 0, B), pooled.narrow(0, B, B)}, 1);
  return head3(torch::relu(head2(torch::relu(head1(uv)))));
}

int64_t ClassifierImpl::mixer_parameters() const {
  int64_t n = 0;  // the plugin's mixers: the host's short convolutions are the backbone's
  for (size_t i = 0; i < blocks_.size(); ++i)
    if (!is_short_conv_block(spec_.model.short_conv, static_cast<int64_t>(i))) n += count_parameters(*blocks_[i]->mixer);
  return n;
}

}  // namespace lra::host
