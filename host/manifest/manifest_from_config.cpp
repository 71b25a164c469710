// config_manifest: the inverse of to_json. A result records the resolved
// configuration its model was built from (result.json "config"); reading it
// back goes through the same field tables that wrote it, so a key added to
// a table (model.padding_mask was one) is read wherever a model is rebuilt,
// never dropped by a second hand-written list of fields.
#include <algorithm>

#include "common/text.h"
#include "manifest/manifest_fields.h"

namespace lra::host {
namespace {

using nlohmann::json;
using namespace manifest_detail;

[[noreturn]] void bad(const std::string& source, const std::string& dotted, const json& v, const std::string& why) {
  fail(ErrorKind::data, source + ": config." + dotted + " = " + v.dump() + ": " + why);
}

Typed typed_from_json(const json& v, Kind kind, const std::string& dotted, const std::string& source) {
  auto wrong = [&]() -> Typed { bad(source, dotted, v, std::string("expected ") + expected(kind)); };
  Typed t;
  switch (kind) {
    case Kind::integer:
      if (!v.is_number_integer()) return wrong();
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return wrong();
      t.i = v.get<int64_t>();
      return t;
    case Kind::number:
      if (!v.is_number()) return wrong();
      t.d = v.get<double>();
      return t;
    case Kind::string:
      if (!v.is_string()) return wrong();
      t.s = v.get<std::string>();
      return t;
    case Kind::pair:
      if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) return wrong();
      t.pair[0] = v[0].get<double>();
      t.pair[1] = v[1].get<double>();
      return t;
    case Kind::int_list:
      if (!v.is_array() || v.empty()) return wrong();
      for (const auto& e : v) {
        if (!e.is_number_integer()) return wrong();
        t.list.push_back(e.get<int64_t>());
      }
      return t;
  }
  return wrong();
}

void read_section(Manifest& m, const json& config, const std::string& section, const std::string& source) {
  const json* s = config.contains(section) ? &config.at(section) : nullptr;
  if (!s || !s->is_object()) bad(source, section, s ? *s : json(), "expected an object (the resolved [" + section + "])");
  const auto& defs = *fields_of(section);
  for (const auto& [key, v] : s->items()) {
    const bool known = std::any_of(defs.begin(), defs.end(), [&](const FieldDef& d) { return key == d.key; });
    if (!known) bad(source, section + "." + key, v, "not a key of [" + section + "] (known: " + text::join(key_names(defs)) + ")");
  }
  for (const auto& d : defs) {
    auto it = s->find(d.key);
    if (it == s->end()) {
      if (d.optional) continue;  // keys added after a release's first results: their defaults
      fail(ErrorKind::data, source + ": config." + section + "." + d.key + ": missing (the resolved [" + section +
                                "] of the run lists every key)");
    }
    d.set(m, typed_from_json(*it, d.kind, section + "." + d.key, source));
  }
}

}  // namespace

Manifest config_manifest(const nlohmann::json& config, const std::string& task, const std::string& source) {
  if (!config.is_object()) fail(ErrorKind::data, source + ": config is " + config.dump() + ", expected an object");
  Manifest m;
  m.schema = kManifestSchema;
  m.name = "recorded configuration";
  m.task = task;
  m.source = source;
  for (const auto& section : section_names()) {
    if (section == "data") continue;
    if (optional_section(section) && !config.contains(section)) continue;
    read_section(m, config, section, source);
    if (section == "pretrain") m.pretrain.present = true;
  }
  if (auto it = config.find("data"); it != config.end()) {
    if (!it->is_object()) bad(source, "data", *it, "expected an object");
    for (const auto& [key, v] : it->items()) {
      if (v.is_boolean()) m.data[key] = v.get<bool>();
      else if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
        m.data[key] = v.get<int64_t>();
      else if (v.is_number_float()) m.data[key] = v.get<double>();
      else if (v.is_string()) m.data[key] = v.get<std::string>();
      else bad(source, "data." + key, v, "expected a scalar");
    }
  }
  if (auto it = config.find("grid"); it != config.end()) grid_from_json(m, *it, source);
  if (auto it = config.find("settings"); it != config.end()) {
    const auto setting = config.find("setting");
    settings_from_json(m, *it, setting == config.end() ? nullptr : &*setting, source);
  }
  validate(m);
  return m;
}

}  // namespace lra::host
