#include "reevaluation/model_parameters.h"

#include <c10/util/Exception.h>
#include <torch/serialize.h>

#include "common/text.h"
#include "isolation/mixer_wire.h"
#include "lra/status.h"

namespace lra::host {

NamedTensors snapshot_tensors(const torch::nn::Module& m) {
  NamedTensors out;
  for (const auto& nt : wire::module_tensors(m)) out.emplace_back(nt.name, nt.tensor.detach().to(torch::kCPU).clone());
  return out;
}

NamedTensors read_model_file(const std::filesystem::path& file) {
  NamedTensors out;
  try {
    torch::serialize::InputArchive ar;
    ar.load_from(file.string(), torch::kCPU);
    c10::IValue format, names_value;
    // The flat format of module_io.cpp ("lrahost_flat_module" = 1): names, then t0, t1, ...
    if (!ar.try_read("lrahost_flat_module", format) || !format.isInt() || format.toInt() != 1 ||
        !ar.try_read("names", names_value) || !names_value.isList())
      throw Error(ErrorKind::data, file.string() + " is not a model file in lrahost's flat format (version 1); "
                                   "re-evaluation reads only files written by lrahost run");
    const auto names = names_value.toList();
    for (size_t i = 0; i < names.size(); ++i) {
      const c10::IValue name = names.get(i);
      if (!name.isString())
        throw Error(ErrorKind::data, file.string() + ": tensor name " + std::to_string(i) + " is not a string");
      at::Tensor t;
      if (!ar.try_read("t" + std::to_string(i), t, /*is_buffer=*/true) || !t.defined())
        throw Error(ErrorKind::data, file.string() + " names tensor '" + name.toStringRef() + "' but does not hold it");
      out.emplace_back(name.toStringRef(), t);
    }
  } catch (const c10::Error& e) {
    const std::string why = text::first_line(e.what_without_backtrace());
    throw Error(ErrorKind::data, file.string() + " cannot be read as a model file: " + why);
  }
  return out;
}

ModelFileCount count_trained_values(const NamedTensors& trained, const NamedTensors& fresh,
                                    const std::map<std::string, std::vector<int64_t>>& host_buffers) {
  std::map<std::string, const at::Tensor*> initial;
  for (const auto& [name, t] : fresh) initial[name] = &t;
  if (initial.size() != fresh.size() || fresh.size() != trained.size())
    throw Error(ErrorKind::plugin, "the freshly initialised model holds " + std::to_string(fresh.size()) +
                                       " tensors, model.pt " + std::to_string(trained.size()));
  ModelFileCount c;
  for (const auto& [name, t] : trained) {
    const auto it = initial.find(name);
    if (it == initial.end() || it->second->sizes() != t.sizes() || it->second->dtype() != t.dtype())
      throw Error(ErrorKind::plugin, "model.pt's tensor '" + name + "' has no counterpart of its shape in the "
                                     "freshly initialised model");
    const auto hb = host_buffers.find(name);
    if (hb != host_buffers.end() && t.sizes().vec() == hb->second) c.host_buffers += t.numel();
    else if (t.equal(*it->second)) c.unchanged += t.numel();
    else c.counted += t.numel();
    ++c.tensors;
  }
  return c;
}

}  // namespace lra::host
