#include "plugins/mixer_options.h"

#include <algorithm>
#include <variant>

#include "common/text.h"
#include "lra/status.h"
#include "reference/reference_mixers.h"

namespace lra::host {
namespace {

using nlohmann::json;

std::vector<lra::OptionSpec> declared_options(const LoadedPlugin& mixer) {
  std::vector<lra::OptionSpec> specs;
  if (auto st = mixer.mixer().options(&specs); !st.ok())
    throw Error(ErrorKind::plugin, "plugin '" + mixer.descriptor.name + "' failed to list its options: " + st.message);
  return specs;
}

lra::Params defaults_of(const std::vector<lra::OptionSpec>& specs) {
  lra::Params out;
  for (const auto& s : specs) out[s.name] = s.default_value;
  return out;
}

std::string option_names(const std::vector<lra::OptionSpec>& specs) {
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  return names.empty() ? "none" : text::join(names);
}

// --set mixer.KEY=VALUE on top of `out`, typed by the declaration.
void apply_given(const LoadedPlugin& mixer, const std::vector<lra::OptionSpec>& specs,
                 const std::map<std::string, std::string>& given, lra::Params& out) {
  for (const auto& [key, text] : given) {
    auto it = out.find(key);
    if (it == out.end())
      throw Error(ErrorKind::rules, "mixer '" + mixer.descriptor.name + "' has no option '" + key +
                                        "' (its options: " + option_names(specs) + ")");
    it->second = parse_typed(text, it->second, "mixer." + key);
  }
}

json to_json(const lra::Value& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

// A table value as the type the plugin declares (an integer where a float is
// declared is fine: TOML writes 1 for 1.0).
lra::Value typed_like(const json& value, const lra::Value& like, const std::string& what) {
  switch (like.index()) {
    case 0:
      if (value.is_boolean()) return value.get<bool>();
      break;
    case 1:
      if (value.is_number_integer()) return value.get<int64_t>();
      break;
    case 2:
      if (value.is_number()) return value.get<double>();
      break;
    default:
      if (value.is_string()) return value.get<std::string>();
  }
  throw Error(ErrorKind::internal, what + " is " + value.dump() + " but the plugin declares a " + type_name(like) +
                                       " (the table is out of step with its plugin: fix the table and rebuild)");
}

bool same(const lra::Value& a, const lra::Value& b) { return a == b; }

}  // namespace

lra::Value parse_typed(const std::string& text, const lra::Value& like, const std::string& key) {
  auto bad = [&]() -> lra::Value {
    throw Error(ErrorKind::rules, "'" + key + "' must be " + type_name(like) + ", got '" + text + "'");
  };
  try {
    size_t used = 0;
    switch (like.index()) {
      case 0:
        if (text == "true") return true;
        if (text == "false") return false;
        return bad();
      case 1: {
        auto v = std::stoll(text, &used);
        return used == text.size() ? lra::Value(static_cast<int64_t>(v)) : bad();
      }
      case 2: {
        auto v = std::stod(text, &used);
        return used == text.size() ? lra::Value(v) : bad();
      }
      default: return text;
    }
  } catch (const std::logic_error&) {  // stoll/stod: invalid_argument, out_of_range
    return bad();
  }
}

lra::Params resolve_mixer_options(const LoadedPlugin& mixer, const std::map<std::string, std::string>& given) {
  const auto specs = declared_options(mixer);
  lra::Params out = defaults_of(specs);
  apply_given(mixer, specs, given, out);
  return out;
}

RunMixerOptions resolve_run_mixer_options(const LoadedPlugin& mixer, const std::map<std::string, std::string>& given,
                                          const Manifest& manifest) {
  const auto specs = declared_options(mixer);
  const lra::Params defaults = defaults_of(specs);
  RunMixerOptions r{defaults, json(nullptr)};
  const std::string& name = mixer.descriptor.name;
  // Built-in means shipped with this host: a third-party .so that happens to
  // be called "performer" gets no reference settings.
  const ReferenceTable& table = reference_table_named(manifest.rules.reference_settings);
  if (!table.has_mixer(name) || !is_builtin_plugin_file(mixer.descriptor.file)) {
    apply_given(mixer, specs, given, r.options);
    return r;
  }
  const auto entry = table.entry(name, manifest.task, is_smoke_manifest(manifest.name));
  lra::Params reference;  // the entry's settings, typed as declared
  json applied = json::array();
  if (entry) {
    for (const auto& [option, setting] : entry->settings) {
      const std::string what = "reference table " + table.file() + ": " + entry->label() + " option '" + option + "'";
      const auto it = defaults.find(option);
      if (it == defaults.end())
        throw Error(ErrorKind::internal, what + " is not an option of plugin '" + name + "' (its options: " +
                                             option_names(specs) + "; fix the table and rebuild)");
      reference[option] = typed_like(setting.value, it->second, what);
      if (!same(reference[option], it->second)) applied.push_back(option);
      r.options[option] = reference[option];
    }
  }
  apply_given(mixer, specs, given, r.options);  // the user's --set wins
  json changed = json::array(), settings = json::object();
  for (const auto& [option, value] : reference) {
    settings[option] = to_json(value);
    if (!same(r.options.at(option), value)) changed.push_back(option);
  }
  r.reference_settings = {{"table", table.file()},
                          {"sha256", table.sha256()},
                          {"entry", entry ? json(entry->label()) : json(nullptr)},
                          {"settings", settings},
                          {"applied", applied},
                          {"changed", changed},
                          {"used", entry.has_value() && changed.empty()},
                          {"deviations", entry ? json(entry->deviations()) : json::array()}};
  return r;
}

std::string describe_reference_settings(const json& rs) {
  if (!rs.is_object()) return "";
  auto list = [](const json& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n.get<std::string>();
    return out.empty() ? std::string("none") : out;
  };
  const std::string table = rs.value("table", "");
  if (!rs.contains("entry") || rs["entry"].is_null()) return "built-in, but " + table + " has no entry for this task: plugin defaults";
  std::string values;
  for (const auto& [k, v] : rs["settings"].items())
    values += (values.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return "LRA reference settings " + rs["entry"].get<std::string>() + " from " + table + " (" +
         (values.empty() ? "no options" : values) + "); set away from the plugin's defaults: " + list(rs["applied"]) +
         "; changed by --set: " + list(rs["changed"]);
}

std::map<std::string, std::string> apply_sets(const std::vector<std::string>& sets, Manifest& manifest,
                                              std::vector<std::string>* applied) {
  std::map<std::string, std::string> mixer_sets;
  const size_t before = applied->size();
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (s.rfind("mixer.", 0) == 0 && eq != std::string::npos) {
      require_utf8_assignment(s);  // as apply_override does for manifest keys
      mixer_sets[s.substr(6, eq - 6)] = s.substr(eq + 1);
      continue;
    }
    // A point of the manifest's [grid] is the protocol's own choice: not an override.
    if (!apply_override(manifest, s)) applied->push_back(s);
  }
  // So are assignments that make one of its [settings] (MAD's difficulty settings).
  if (settle_setting(manifest)) {
    const ProtocolSetting& setting = *find_setting(manifest, manifest.setting);
    auto its_own = [&](const std::string& assignment) {
      const std::string key(text::trim(assignment.substr(0, assignment.find('='))));
      for (const auto& [k, v] : setting.changes)
        if (k == key) return true;
      return false;
    };
    applied->erase(std::remove_if(applied->begin() + static_cast<std::ptrdiff_t>(before), applied->end(), its_own),
                   applied->end());
  }
  return mixer_sets;
}

nlohmann::json params_json(const lra::Params& p) {
  auto j = nlohmann::json::object();
  for (const auto& [k, v] : p) std::visit([&, key = k](const auto& x) { j[key] = x; }, v);
  return j;
}

}  // namespace lra::host
