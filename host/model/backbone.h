// The LRA encoder backbone (reference §2): embeddings, CLS, positions,
// pre-LayerNorm blocks around a mixer, GELU feed-forward, final LayerNorm,
// pooling and a two-layer classifier head. Only the mixer comes from a plugin.
#pragma once

#include <functional>
#include <memory>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "lra/mixer.h"
#include "manifest/manifest.h"

namespace lra::host {

using MixerFactory = std::function<std::shared_ptr<lra::Mixer>(const lra::MixerSpec&)>;

struct BackboneSpec {
  ModelConfig model;
  int64_t vocab_size = 0;
  int64_t num_classes = 0;
  uint64_t seed = 0;  // passed to mixers for their own fixed randomness
};

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& m, std::shared_ptr<lra::Mixer> mixer);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);
  std::shared_ptr<lra::Mixer> mixer;

 private:
  torch::nn::LayerNorm ln_mix{nullptr}, ln_ffn{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Block);

class ClassifierImpl : public torch::nn::Module {
 public:
  ClassifierImpl(const BackboneSpec& spec, const MixerFactory& make_mixer);
  // ids: [B, L] int64 with 0 = padding. Returns logits [B, num_classes].
  torch::Tensor forward(const torch::Tensor& ids);
  const std::vector<Block>& blocks() const { return blocks_; }
  int64_t mixer_parameters() const;

 private:
  BackboneSpec spec_;
  bool use_cls_;
  torch::nn::Embedding embed{nullptr};
  torch::Tensor cls_, learned_pos_, sinusoid_;
  torch::nn::Dropout drop{nullptr};
  std::vector<Block> blocks_;
  torch::nn::LayerNorm final_ln{nullptr};
  torch::nn::Linear head1{nullptr}, head2{nullptr};
};
TORCH_MODULE(Classifier);

// LRA's fixed sinusoidal table, sine and cosine interleaved on even/odd channels.
torch::Tensor sinusoidal_positions(int64_t max_len, int64_t d_model);

// The reference Transformer's softmax attention, built into the host (not a
// plugin) so the parameter budget never depends on a loadable file.
std::shared_ptr<lra::Mixer> make_reference_attention(const lra::MixerSpec& spec);

int64_t count_parameters(const torch::nn::Module& m);

}  // namespace lra::host
