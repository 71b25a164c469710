// to_json: the resolved configuration for result files, generated from the
// field tables. Its output is hashed into results (the config digest): the
// keys and their values, integers and floats alike, must not change.
#include "manifest/manifest_fields.h"

namespace lra::host {
namespace {

using nlohmann::json;
using namespace manifest_detail;

// One section, every field through its getter (a null value leaves the key out).
json section_json(const Manifest& m, const std::vector<FieldDef>& defs) {
  json out = json::object();
  for (const auto& d : defs) {
    json v = d.get(m);
    if (!v.is_null()) out[d.key] = std::move(v);
  }
  return out;
}

json data_json(const lra::Params& params) {
  json data = json::object();
  for (const auto& [k, v] : params) {
    switch (v.index()) {
      case 0: data[k] = std::get<bool>(v); break;
      case 1: data[k] = std::get<int64_t>(v); break;
      case 2: data[k] = std::get<double>(v); break;
      default: data[k] = std::get<std::string>(v); break;
    }
  }
  return data;
}

}  // namespace

nlohmann::json to_json(const Manifest& m) {
  json out = json::object();
  out["model"] = section_json(m, model_fields());
  out["train"] = section_json(m, train_fields());
  out["data"] = data_json(m.data);
  out["rules"] = section_json(m, rules_fields());
  // Only a self-pretraining manifest has it: from-scratch configurations keep their keys.
  if (m.pretrain.present) out["pretrain"] = section_json(m, pretrain_fields());
  // Likewise only a protocol with a grid: configurations without one hash as before.
  if (!m.grid.empty()) out["grid"] = grid_json(m);
  // And only a protocol with settings: which one the run stands on, and all of them.
  if (!m.settings.empty()) {
    out["settings"] = settings_json(m);
    out["setting"] = setting_name(m);
  }
  return out;
}

}  // namespace lra::host
