#include "forgetting/torchscript_lm.h"

#include <torch/script.h>

#include "lra/status.h"

namespace lra::host::forgetting {

struct TorchScriptLM::Impl {
  torch::jit::Module module;
  at::Device device;
};

TorchScriptLM::TorchScriptLM(const std::filesystem::path& file, const at::Device& device) : file_(file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw Error(ErrorKind::usage, "--torchscript " + file.string() + ": no such file (expected a model saved with "
                                      "torch.jit.save or torch::jit::Module::save)");
  try {
    impl_ = std::make_unique<Impl>(Impl{torch::jit::load(file.string(), device), device});
  } catch (const std::exception& e) {
    std::string msg = e.what();
    msg.resize(std::min(msg.size(), msg.find('\n')));
    throw Error(ErrorKind::plugin, "--torchscript " + file.string() + ": not a loadable TorchScript model: " + msg);
  }
  impl_->module.eval();
}

TorchScriptLM::~TorchScriptLM() = default;

at::Tensor TorchScriptLM::argmax(const at::Tensor& ids) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> rows;
  for (int64_t b = 0; b < ids.size(0); ++b) {
    auto out = impl_->module.forward({ids.narrow(0, b, 1).to(impl_->device)});
    at::Tensor logits;
    if (out.isTensor()) logits = out.toTensor();
    else if (out.isTuple() && !out.toTupleRef().elements().empty() && out.toTupleRef().elements()[0].isTensor())
      logits = out.toTupleRef().elements()[0].toTensor();
    else if (out.isGenericDict() && out.toGenericDict().contains("logits"))
      logits = out.toGenericDict().at("logits").toTensor();
    else
      throw Error(ErrorKind::plugin, file_.string() + ": forward returned " + out.tagKind() +
                                         "; expected logits [1, T, V] (a tensor, a tuple starting with it, or a dict "
                                         "with \"logits\")");
    if (logits.dim() != 3 || logits.size(0) != 1 || logits.size(1) != ids.size(1))
      throw Error(ErrorKind::plugin, file_.string() + ": forward returned logits of shape " + c10::str(logits.sizes()) +
                                         " for ids [1, " + std::to_string(ids.size(1)) + "]; expected [1, T, V]");
    vocab_ = logits.size(2);
    rows.push_back(logits.argmax(-1).to(at::kCPU, at::kLong));
  }
  return at::cat(rows, 0);
}

}  // namespace lra::host::forgetting
