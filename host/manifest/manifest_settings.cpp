// [settings]: a protocol's named variants of its own configuration (MAD's
// difficulty settings, each a change of one knob from the task's baseline,
// configs.py make_benchmark_mad_configs). Read from the file, written into
// the resolved configuration, read back from a result, and the test of
// whether a run's --set assignments are exactly one of them.
#include <algorithm>
#include <set>

#include "common/text.h"
#include "manifest/manifest_fields.h"

namespace lra::host {
namespace manifest_detail {
namespace {

using nlohmann::json;

// A scalar TOML value as JSON (settings change scalars only).
json scalar_json(const toml::node& n, const std::string& where) {
  if (auto v = n.value_exact<int64_t>()) return *v;
  if (auto v = n.value_exact<double>()) return *v;
  if (auto v = n.value_exact<bool>()) return *v;
  if (auto v = n.value_exact<std::string>()) return *v;
  fail(ErrorKind::rules, where + " = " + render(n) + ": a setting changes scalar keys (a number, a boolean or a string)");
}

bool is_setting_name_char(char c) { return is_name_char(c) || c == '.'; }

// The keys of a setting's table, dotted: { data.vocab_size = 32 } and { "data.vocab_size" = 32 } alike.
void flatten(const toml::table& t, const std::string& prefix, const std::string& where,
             std::vector<std::pair<std::string, json>>& out) {
  for (const auto& [k, v] : t) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = v.as_table()) flatten(*sub, key, where, out);
    else out.emplace_back(key, scalar_json(v, where + "." + key));
  }
}

// Why a setting may not change `key`, or "".
std::string key_problem(const Manifest& m, const std::string& key) {
  const std::string section = key.substr(0, key.find('.'));
  if (section != "data" && section != "model" && section != "train")
    return "a setting changes [data], [model] or [train] keys, not '" + key + "'";
  if (key == "train.seed") return "train.seed is the trial seed (rules.seeds), not part of a setting";
  if (grid_axis(m, key)) return "'" + key + "' is an axis of [grid]; a setting cannot also move it";
  return "";
}

}  // namespace

std::string setting_assignment(const std::string& key, const json& value) {
  return key + "=" + (value.is_string() ? json(value.get<std::string>()).dump() : value.dump());
}

json value_at(const Manifest& m, const std::string& key) {
  const auto dot = key.find('.');
  const std::string section = key.substr(0, dot), name = key.substr(dot + 1);
  if (section == "data") {
    const auto it = m.data.find(name);
    if (it == m.data.end()) return nullptr;
    return std::visit([](const auto& x) { return json(x); }, it->second);
  }
  if (const auto* defs = fields_of(section))
    for (const auto& d : *defs)
      if (name == d.key) return d.get(m);
  return nullptr;
}

void read_settings(Manifest& m, const toml::node& node, const Ctx& ctx) {
  const toml::table* settings = node.as_table();
  if (!settings) fail(ErrorKind::rules, ctx.at(node) + ": settings = " + render(node) + ": expected a section [settings]");
  // The file's order (toml++ keeps keys sorted): the baseline's variants as the protocol lists them.
  std::vector<std::pair<toml::source_position, ProtocolSetting>> read;
  for (const auto& [name, body] : *settings) {
    const std::string n(name.str()), where = ctx.at(body) + ": settings." + n;
    if (n.empty() || !std::all_of(n.begin(), n.end(), is_setting_name_char))
      fail(ErrorKind::rules, where + ": a setting's name is letters, digits, '_', '-' and '.' (e.g. vocab_size-32)");
    if (n == kBaselineSetting)
      fail(ErrorKind::rules, where + ": '" + kBaselineSetting + "' names the file's own configuration; choose another name");
    const toml::table* changes = body.as_table();
    if (!changes || changes->empty())
      fail(ErrorKind::rules, where + " = " + render(body) + ": expected the keys it changes, e.g. " + n +
                                 " = { data.vocab_size = 32 }");
    ProtocolSetting s{n, {}};
    flatten(*changes, "", "settings." + n, s.changes);
    read.emplace_back(body.source().begin, std::move(s));
  }
  std::stable_sort(read.begin(), read.end(), [](const auto& a, const auto& b) {
    return a.first.line < b.first.line || (a.first.line == b.first.line && a.first.column < b.first.column);
  });
  for (auto& [pos, s] : read) m.settings.push_back(std::move(s));
}

void check_settings(const Manifest& m, const Ctx& ctx) {
  std::set<std::string> seen;
  for (const auto& s : m.settings) {
    const std::string where = ctx.at_key("settings") + ": settings." + s.name;
    Manifest scratch = m;
    scratch.settings.clear();
    for (const auto& [key, value] : s.changes) {
      if (const std::string why = key_problem(m, key); !why.empty()) fail(ErrorKind::rules, where + ": " + why);
      try {
        apply_override(scratch, setting_assignment(key, value));
      } catch (const Error& e) {
        fail(ErrorKind::rules, where + ": " + e.what());
      }
      if (value_at(scratch, key) == value_at(m, key))
        fail(ErrorKind::rules, where + ": " + key + " = " + value.dump() + " is the file's own value; a setting "
                                   "lists what it changes");
    }
    std::vector<std::string> assignments;
    for (const auto& [key, value] : s.changes) assignments.push_back(setting_assignment(key, value));
    std::sort(assignments.begin(), assignments.end());
    if (!seen.insert(text::join(assignments, " ")).second)
      fail(ErrorKind::rules, where + ": the same changes as another setting");
  }
}

json settings_json(const Manifest& m) {
  json out = json::object();
  for (const auto& s : m.settings) {
    json changes = json::object();
    for (const auto& [key, value] : s.changes) changes[key] = value;
    out[s.name] = std::move(changes);
  }
  return out;
}

void settings_from_json(Manifest& m, const json& settings, const json* setting, const std::string& source) {
  if (!settings.is_object()) fail(ErrorKind::data, source + ": config.settings = " + settings.dump() + ": expected an object");
  for (const auto& [name, changes] : settings.items()) {
    if (!changes.is_object() || changes.empty())
      fail(ErrorKind::data, source + ": config.settings." + name + ": expected an object of the keys it changes");
    ProtocolSetting s{name, {}};
    for (const auto& [key, value] : changes.items()) {
      if (!value.is_primitive() || value.is_null())
        fail(ErrorKind::data, source + ": config.settings." + name + "." + key + ": expected a scalar");
      s.changes.emplace_back(key, value);
    }
    m.settings.push_back(std::move(s));
  }
  if (!setting || !setting->is_string())
    fail(ErrorKind::data, source + ": config.setting: expected the name of the setting the run stands on (\"" +
                              std::string(kBaselineSetting) + "\" for the manifest's own)");
  const std::string name = setting->get<std::string>();
  if (name != kBaselineSetting && !find_setting(m, name))
    fail(ErrorKind::data, source + ": config.setting = \"" + name + "\" is not one of config.settings");
  m.setting = name == kBaselineSetting ? "" : name;
}

}  // namespace manifest_detail

const ProtocolSetting* find_setting(const Manifest& m, const std::string& name) {
  for (const auto& s : m.settings)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> setting_assignments(const ProtocolSetting& s) {
  std::vector<std::string> out;
  for (const auto& [key, value] : s.changes) out.push_back(manifest_detail::setting_assignment(key, value));
  return out;
}

std::string setting_name(const Manifest& m) { return m.setting.empty() ? kBaselineSetting : m.setting; }

Manifest at_setting(const Manifest& m, const std::string& name) {
  if (name.empty() || name == kBaselineSetting) return m;
  const ProtocolSetting* s = find_setting(m, name);
  if (!s) {
    std::vector<std::string> names = {kBaselineSetting};
    for (const auto& x : m.settings) names.push_back(x.name);
    throw Error(ErrorKind::usage, m.source + " has no setting '" + name + "' (settings: " + text::join(names) + ")");
  }
  Manifest out = m;
  for (const auto& [key, value] : s->changes) apply_override(out, manifest_detail::setting_assignment(key, value));
  out.overrides = m.overrides;
  out.setting = name;
  return out;
}

bool settle_setting(Manifest& m) {
  if (m.settings.empty() || m.overrides.empty() || !m.setting.empty()) return false;
  std::set<std::string> assigned;
  for (const auto& o : m.overrides) assigned.insert(o.substr(0, o.find('=')));
  // The setting with the most changes that the assignments make, each to the
  // setting's value as the manifest holds it (--set data.frac_noise=0.40 is
  // the setting's 0.4); the first in the file's order on a tie.
  const ProtocolSetting* best = nullptr;
  for (const auto& s : m.settings) {
    Manifest want = m;
    bool made = true;
    for (const auto& [key, value] : s.changes) {
      made = made && assigned.count(key);
      if (!made) break;
      apply_override(want, manifest_detail::setting_assignment(key, value));
      made = manifest_detail::value_at(want, key) == manifest_detail::value_at(m, key);
    }
    if (made && (!best || s.changes.size() > best->changes.size())) best = &s;
  }
  if (!best) return false;
  // Its assignments are the protocol's; any other stays an override (the run is open, at that setting).
  std::set<std::string> keys;
  for (const auto& [key, value] : best->changes) keys.insert(key);
  std::vector<std::string> rest;
  for (const auto& o : m.overrides)
    if (!keys.count(o.substr(0, o.find('=')))) rest.push_back(o);
  m.overrides = std::move(rest);
  m.setting = best->name;
  return true;
}

}  // namespace lra::host
