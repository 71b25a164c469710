// The causal language model of the forgetting curve (docs/forgetting.md, "The
// model and its training"; a smaller version of the paper's 83M Llama,
// docs/deviations.md "Forgetting curve"): token embedding,
// pre-norm blocks (RMSNorm -> causal mixer -> residual, RMSNorm -> SwiGLU ->
// residual), final RMSNorm and an untied output layer. Positions come only
// from the mixers (rotary, lra/rotary.h). Only the mixer comes from a plugin.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include "lra/dropout.h"
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "lra/mixer.h"
#include "manifest/manifest.h"
#include "model/backbone.h"

namespace lra::host {

// Byte-level vocabulary of the host's language models: ids 0..255 are the
// bytes, then the two separators the forgetting measurement needs.
inline constexpr int64_t kByteBos = 256;
inline constexpr int64_t kByteEos = 257;
inline constexpr int64_t kByteVocab = 258;

struct CausalLMSpec {
  ModelConfig model;                 // layers, d_model, heads, qkv_dim, ffn_dim (SwiGLU width), dropout
  int64_t vocab_size = kByteVocab;
  uint64_t seed = 0;                 // passed to mixers for their own fixed randomness
  double rotary_base = 10000.0;      // Llama's default theta
  // Where positions come from: "rotary" (inside the mixers, MixerSpec::rotary_base),
  // or for mixers without LRA_CAP_ROTARY "none" or "sinusoidal" (added to the
  // token embeddings, extended to any length; the mixers then get rotary_base = 0).
  std::string positions = "rotary";
  double norm_eps = 1e-5;            // RMSNorm epsilon (Llama)
};

// y = x / sqrt(mean(x^2) + eps) * weight, computed in float32.
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

class LlamaBlockImpl : public torch::nn::Module {
 public:
  LlamaBlockImpl(const CausalLMSpec& s, std::shared_ptr<lra::Mixer> mixer);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);
  std::shared_ptr<lra::Mixer> mixer;

 private:
  RMSNorm mix_norm{nullptr}, ffn_norm{nullptr};
  torch::nn::Linear gate{nullptr}, up{nullptr}, down{nullptr};  // SwiGLU: down(silu(gate x) * up x)
  // Inverted dropout with the manifest's rate in training (lra/dropout.h).
  torch::Tensor drop(const torch::Tensor& x) const { return lra::ops::dropout(x, dropout_, is_training()); }
  double dropout_ = 0.0;
};
TORCH_MODULE(LlamaBlock);

class CausalLMImpl : public torch::nn::Module {
 public:
  // make_mixer receives MixerSpec{causal = true, rotary_base = spec.rotary_base
  // with positions "rotary", else 0}.
  CausalLMImpl(const CausalLMSpec& spec, const MixerFactory& make_mixer);
  // ids: [B, T] int64 -> next-token logits [B, T, vocab].
  torch::Tensor forward(const torch::Tensor& ids);
  const CausalLMSpec& spec() const { return spec_; }
  int64_t mixer_parameters() const;
  const std::vector<LlamaBlock>& blocks() const { return blocks_; }

 private:
  CausalLMSpec spec_;
  torch::nn::Embedding embed{nullptr};
  torch::Tensor pos_;  // [max_len, d_model] sinusoids for positions "sinusoidal" (a buffer)
  // Inverted dropout with the manifest's rate in training (lra/dropout.h).
  torch::Tensor drop(const torch::Tensor& x) const { return lra::ops::dropout(x, dropout_, is_training()); }
  double dropout_ = 0.0;
  std::vector<LlamaBlock> blocks_;
  RMSNorm final_norm{nullptr};
  torch::nn::Linear lm_head{nullptr};
};
TORCH_MODULE(CausalLM);

}  // namespace lra::host
