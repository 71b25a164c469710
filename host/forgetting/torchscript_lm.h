// forgetting/torchscript_lm.h — any causal LM exported to TorchScript, so
// pretrained models can be measured without Python at run time. Contract
// (docs/forgetting.md, "Measuring any exported model"): forward(ids: int64 [1, T]) returns logits [1, T, V]
// (a tuple or dict holding them as its first element / "logits" is accepted,
// as Hugging Face exports return).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <ATen/ATen.h>

namespace lra::host::forgetting {

class TorchScriptLM {
 public:
  // Loads the file onto `device`, in eval mode. A missing or unreadable file
  // is a usage error; a file that is not TorchScript is a plugin error.
  TorchScriptLM(const std::filesystem::path& file, const at::Device& device);
  ~TorchScriptLM();
  // ids [B, T] (CPU) -> argmax of the logits [B, T] (CPU), one row per call
  // so the model only ever sees [1, T].
  at::Tensor argmax(const at::Tensor& ids);
  // The vocabulary size V seen in the last forward pass (0 before any).
  int64_t vocab_size() const { return vocab_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::filesystem::path file_;
  int64_t vocab_ = 0;
};

}  // namespace lra::host::forgetting
