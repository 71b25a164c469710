// The LRA encoder backbone (as the LRA code's Transformer encoder builds it;
// differences in docs/deviations.md and docs/reproduction.md): embeddings, CLS, positions,
// pre-LayerNorm blocks around a mixer, GELU feed-forward, final LayerNorm,
// pooling and a two-layer classifier head. Only the mixer comes from a plugin.
#pragma once

#include <functional>
#include <memory>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include "lra/dropout.h"
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "lra/mixer.h"
#include "lra/task.h"
#include "manifest/manifest.h"
#include "model/last_state_decoder.h"
#include "rules/summary_position.h"

namespace lra::host {

using MixerFactory = std::function<std::shared_ptr<lra::Mixer>(const lra::MixerSpec&)>;

struct BackboneSpec {
  ModelConfig model;
  int64_t vocab_size = 0;
  int64_t num_classes = 0;
  uint64_t seed = 0;    // passed to mixers for their own fixed randomness
  bool paired = false;  // two inputs, one shared encoder, an MLP over both pooled vectors (Retrieval)
  SummaryPosition summary = SummaryPosition::first;  // where "cls" and "first" pooling read
  // A sequence task (lra::Dataset::sequence, pooling "none"): the mixers are
  // built causal, and a linear head over `num_classes` (the task's target
  // classes) reads every position instead of a pooled summary.
  bool per_position = false;
  // A per-position model's readout (SDK 1.5): with from_last_state the head
  // is MAD's decoder of each example's last state (model/last_state_decoder.h)
  // instead of the linear head at every position.
  lra::SequenceReadout readout = lra::SequenceReadout::every_position;
  bool from_last_state() const { return per_position && readout == lra::SequenceReadout::from_last_state; }
};

// The backbone a task's loaded data call for: its vocabulary, and a pooled
// classifier over its classes, or for a sequence task (lra::Dataset::sequence)
// a per-position model over its target classes, read as the task says
// (SequenceTargets::readout).
BackboneSpec backbone_spec(const ModelConfig& m, const lra::Dataset& data, uint64_t seed);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& m, std::shared_ptr<lra::Mixer> mixer);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);
  std::shared_ptr<lra::Mixer> mixer;
  // While on, each forward keeps what the mixer received (its input after the
  // LayerNorm, detached, and its mask): the point `lrahost span` differentiates
  // the mixer at (span/gradient_span.h).
  void set_capture(bool on) { capture_ = on; }
  const torch::Tensor& captured_input() const { return captured_input_; }
  const torch::Tensor& captured_mask() const { return captured_mask_; }

 private:
  bool capture_ = false;
  torch::Tensor captured_input_, captured_mask_;
  torch::nn::LayerNorm ln_mix{nullptr}, ln_ffn{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  // Inverted dropout with the manifest's rate in training (lra/dropout.h).
  torch::Tensor drop(const torch::Tensor& x) const { return lra::ops::dropout(x, dropout_, is_training()); }
  double dropout_ = 0.0;
};
TORCH_MODULE(Block);

class ClassifierImpl : public torch::nn::Module {
 public:
  ClassifierImpl(const BackboneSpec& spec, const MixerFactory& make_mixer);
  // ids: [B, L] int64; mask: [B, L] bool, true at real tokens. Paired models
  // take the second input as ids2/mask2. Returns logits [B, num_classes]
  // ([B, L, num_classes] for a per-position model).
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& mask, const torch::Tensor& ids2 = {},
                        const torch::Tensor& mask2 = {});
  // A per-position model's logits [N, num_classes] at the N positions whose
  // target ([B, L] int64) is not lra::kIgnoreTarget, in row-major order: the
  // head runs only where a target is scored (a last-state decoder: from the
  // example's last state and the position alone).
  torch::Tensor scored_logits(const torch::Tensor& ids, const torch::Tensor& mask, const torch::Tensor& targets);
  bool per_position() const { return spec_.per_position; }
  // The encoder alone: one pooled vector [B, d_model] per input.
  torch::Tensor encode(const torch::Tensor& ids, const torch::Tensor& mask);
  // The encoder's output at every token [B, L, d_model], aligned with `ids`
  // (the CLS position left out), for the pretraining heads (pretrain/).
  // Where `replaced` ([B, L] bool) is true the token's embedding is
  // `replacement` ([d_model]) instead, and the position counts as a real key
  // whatever its id: a masked pixel's value must not show through
  // model.padding_mask = "nonzero_tokens".
  torch::Tensor token_states(const torch::Tensor& ids, const torch::Tensor& mask, const torch::Tensor& replaced = {},
                             const torch::Tensor& replacement = {});
  // The padding mask the mixers see for these inputs (without the CLS
  // position): `mask` itself, or with model.padding_mask = "nonzero_tokens"
  // also false wherever the id is 0 (LRA's `token > 0`).
  torch::Tensor key_mask(const torch::Tensor& ids, const torch::Tensor& mask) const;
  const std::vector<Block>& blocks() const { return blocks_; }
  // Every block's mixer module, the host's short convolutions included.
  std::vector<std::shared_ptr<lra::Mixer>> mixers() const;
  // The parameters of the classifier head (head1, head2, head3; a
  // per-position model's linear head is head1, a last-state decoder is
  // decoder): the part a pretrained encoder does not give
  // (pretrain/pretrained_encoder.h).
  std::vector<std::string> head_parameter_prefixes() const { return {"head1.", "head2.", "head3.", "decoder."}; }
  // Where "cls" and "first" pooling read (BackboneSpec::summary); no
  // parameter depends on it, so the host may decide it once the mixers have
  // passed their conformance checks.
  void set_summary(SummaryPosition p) { spec_.summary = p; }
  int64_t mixer_parameters() const;

 private:
  // The blocks' output after the final LayerNorm, CLS slot included; `lengths`
  // ([B], only with after_last summaries) and where the tokens start.
  struct EncoderStates {
    torch::Tensor x, lengths;
    int64_t token_offset = 0;
  };
  EncoderStates run_encoder(const torch::Tensor& ids, const torch::Tensor& length_mask, const torch::Tensor& replaced,
                            const torch::Tensor& replacement);
  BackboneSpec spec_;
  bool use_cls_;
  torch::nn::Embedding embed{nullptr};
  torch::Tensor cls_, learned_pos_, sinusoid_;
  // Inverted dropout with the manifest's rate in training (lra/dropout.h).
  torch::Tensor drop(const torch::Tensor& x) const { return lra::ops::dropout(x, dropout_, is_training()); }
  double dropout_ = 0.0;
  std::vector<Block> blocks_;
  torch::nn::LayerNorm final_ln{nullptr};
  torch::nn::Linear head1{nullptr}, head2{nullptr}, head3{nullptr};  // head3: paired models only
  LastStateDecoder decoder_{nullptr};  // BackboneSpec::from_last_state() instead of head1
};
TORCH_MODULE(Classifier);

// The rotary base of a classifier with model.positions = "rotary" (RoFormer's
// and Llama's 10,000); the mixers receive it as MixerSpec::rotary_base.
inline constexpr double kClassifierRotaryBase = 10000.0;

// LRA's fixed sinusoidal table, sine and cosine interleaved on even/odd channels.
torch::Tensor sinusoidal_positions(int64_t max_len, int64_t d_model);

// The reference Transformer's softmax attention, built into the host (not a
// plugin) so the parameter budget never depends on a loadable file.
std::shared_ptr<lra::Mixer> make_reference_attention(const lra::MixerSpec& spec);

int64_t count_parameters(const torch::nn::Module& m);

// The encoder's sequence length: the manifest's max_len, and one more for the
// CLS token under cls pooling (what every block's mixer sees).
int64_t encoder_positions(const ModelConfig& m);

// The spec of block `layer`'s mixer from the manifest's model section
// (bidirectional, no rotary positions; callers change what differs). The
// classifier's blocks get MixerSpec::causal for a per-position model.
lra::MixerSpec mixer_spec(const ModelConfig& m, int64_t max_len, int64_t layer, uint64_t seed);

}  // namespace lra::host
