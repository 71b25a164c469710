// pretrain/pretraining_model.h — the classifier's encoder with the host's
// pretraining head (docs/rules.md "Self-pretraining"): a learned mask vector
// that stands in for masked tokens, and a linear decoder from every
// position's output to the task's vocabulary. The head lives in the host, so
// a mixer plugin (C++ or Python) needs nothing new; it is dropped when the
// fine-tuning starts, and the classifier head starts from the trial's seed.
#pragma once

#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "model/backbone.h"
#include "pretrain/objectives.h"

namespace lra::host {

class PretrainingModelImpl : public torch::nn::Module {
 public:
  // `classifier` is the model the fine-tuning will train (built by the run
  // from the trial seed); the head's own values come from `seed` too.
  PretrainingModelImpl(Classifier classifier, int64_t vocab_size, uint64_t seed);
  // Token logits [B, L, vocab] for inputs ids/mask [B, L]; `masked` ([B, L]
  // bool) marks the positions the mask vector replaces (undefined: none).
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& mask, const torch::Tensor& masked = {});
  Classifier classifier;

 private:
  torch::Tensor mask_vector_;
  torch::nn::Linear decoder_{nullptr};
};
TORCH_MODULE(PretrainingModel);

// The submodule name of the classifier inside a PretrainingModel: its
// parameters are "classifier.<name>" there.
inline constexpr const char* kPretrainedClassifier = "classifier";

}  // namespace lra::host
