#include "train/module_io.h"

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <c10/util/Exception.h>
#include <torch/serialize.h>

#include "common/atomic_file.h"

namespace lra::host {
namespace {

const char* const kFormatKey = "lrahost_flat_module";  // its value: the format version
constexpr int64_t kFormat = 1;

// Parameters first, then buffers, each in registration order; undefined tensors skipped.
std::vector<std::pair<std::string, at::Tensor>> named_tensors(const torch::nn::Module& model) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : model.named_parameters(/*recurse=*/true))
    if (p.value().defined()) out.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers(/*recurse=*/true))
    if (b.value().defined()) out.emplace_back(b.key(), b.value());
  return out;
}

}  // namespace

void save_module(const torch::nn::Module& model, const std::filesystem::path& file) {
  torch::serialize::OutputArchive ar;
  const auto tensors = named_tensors(model);
  c10::List<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  ar.write(kFormatKey, c10::IValue(kFormat));
  ar.write("names", c10::IValue(names));
  for (size_t i = 0; i < tensors.size(); ++i)
    ar.write("t" + std::to_string(i), tensors[i].second.detach(), /*is_buffer=*/true);
  // Serialised in memory, then one checked atomic write: a full disk is
  // Error(storage) with the previous file left in place, not an abort inside
  // LibTorch's writer with a truncated file.
  std::ostringstream bytes;
  ar.save_to(bytes);
  write_file_atomic(file, bytes.str());
}

void load_module(torch::nn::Module& model, const std::filesystem::path& file, const torch::Device& device) {
  torch::serialize::InputArchive ar;
  ar.load_from(file.string(), device);
  c10::IValue format;
  if (!ar.try_read(kFormatKey, format)) {  // written by Module::save
    model.load(ar);
    return;
  }
  TORCH_CHECK(format.isInt() && format.toInt() == kFormat, file.string(), " has model format ",
              format.isInt() ? std::to_string(format.toInt()) : std::string("?"), ", this lrahost reads format ",
              kFormat, ": load it with the lrahost version that wrote it");
  c10::IValue names_value;
  ar.read("names", names_value);
  std::map<std::string, size_t> index;
  const auto names = names_value.toList();
  for (size_t i = 0; i < names.size(); ++i) index[names.get(i).toStringRef()] = i;
  torch::NoGradGuard no_grad;
  size_t matched = 0;
  for (auto& [name, tensor] : named_tensors(model)) {
    auto it = index.find(name);
    TORCH_CHECK(it != index.end(), file.string(), " has no tensor '", name, "', which the model has");
    at::Tensor stored;
    ar.read("t" + std::to_string(it->second), stored, /*is_buffer=*/true);
    TORCH_CHECK(stored.sizes() == tensor.sizes(), file.string(), ": tensor '", name, "' has shape ", stored.sizes(),
                ", the model's has ", tensor.sizes());
    tensor.copy_(stored);
    ++matched;
  }
  if (matched != index.size()) {
    const auto model_tensors = named_tensors(model);
    std::map<std::string, int> have;
    for (const auto& [name, t] : model_tensors) have[name] = 1;
    for (const auto& [name, i] : index)
      TORCH_CHECK(have.count(name), file.string(), " has a tensor '", name, "' that the model does not have");
  }
}

void copy_module_state(const torch::nn::Module& from, torch::nn::Module& to) {
  std::map<std::string, at::Tensor> source;
  for (auto& [name, tensor] : named_tensors(from)) source.emplace(name, tensor);
  const auto target = named_tensors(to);
  TORCH_CHECK(source.size() == target.size(), "copy_module_state: ", source.size(), " tensors into ", target.size());
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : target) {
    const auto it = source.find(name);
    TORCH_CHECK(it != source.end(), "copy_module_state: the source has no tensor ", name);
    TORCH_CHECK(it->second.sizes() == tensor.sizes(), "copy_module_state: ", name, " has shape ", it->second.sizes(),
                ", the target's is ", tensor.sizes());
    tensor.copy_(it->second);
  }
}

}  // namespace lra::host
