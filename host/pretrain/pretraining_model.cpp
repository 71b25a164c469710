#include "pretrain/pretraining_model.h"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>

namespace lra::host {

PretrainingModelImpl::PretrainingModelImpl(Classifier c, int64_t vocab_size, uint64_t seed) : classifier(std::move(c)) {
  register_module(kPretrainedClassifier, classifier);
  // named_parameters() returns a dictionary by value: keep it while reading from it.
  const auto parameters = classifier->named_parameters();
  const auto* embed_weight = parameters.find("embed.weight");
  TORCH_CHECK(embed_weight != nullptr, "PretrainingModel: the classifier has no embed.weight");
  const int64_t d = embed_weight->size(1);
  // Its own generator: the head's values are a function of the seed alone,
  // never of how many numbers the mixers drew.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ 0x5350545f48454144ULL);  // "SPT_HEAD"
  torch::NoGradGuard g;
  // Like a token embedding (LRA: N(0, 1)).
  mask_vector_ = register_parameter("mask_vector", at::normal(0.0, 1.0, {d}, gen));
  // Flax's Dense default, as the classifier head (LeCun normal, zero bias).
  decoder_ = register_module("decoder", torch::nn::Linear(d, vocab_size));
  decoder_->weight.copy_(at::normal(0.0, 1.0 / std::sqrt(static_cast<double>(d)), {vocab_size, d}, gen));
  decoder_->bias.zero_();
}

torch::Tensor PretrainingModelImpl::forward(const torch::Tensor& ids, const torch::Tensor& mask,
                                            const torch::Tensor& masked) {
  return decoder_(classifier->token_states(ids, mask, masked, masked.defined() ? mask_vector_ : torch::Tensor()));
}

}  // namespace lra::host
