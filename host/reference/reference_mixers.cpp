#include "reference/reference_mixers.h"

#include <algorithm>
#include <mutex>

#include <toml++/toml.h>

#include "common/json_input.h"
#include "common/sha256.h"
#include "lra/status.h"
#include "reference/embedded_tables.h"

namespace lra::host {
namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "lrahost.reference-mixers/v1";
constexpr std::string_view kConfigurationSchema = "lrahost.reference-configuration/v1";
// What a configuration's setting may name: a manifest section's key or a plugin option.
constexpr const char* kConfigurationKeyPrefixes[] = {"model.", "train.", "data.", "rules.", "mixer."};
constexpr std::string_view kExt = ".toml";

// Everything in the table is checked here; `where` is "file, line N: key".
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void broken(const toml::node* at, const std::string& key, const std::string& what) const {
    std::string where = file_;
    if (at && at->source().begin.line) where += ", line " + std::to_string(at->source().begin.line);
    throw Error(ErrorKind::internal, "reference table " + where + ": " + key + " " + what +
                                         " (the table is compiled into lrahost: fix manifests/" + file_ +
                                         " and rebuild)");
  }

  std::string string_at(const toml::table& t, const std::string& key, const std::string& dotted, bool required) const {
    const toml::node* n = t.get(key);
    if (!n) {
      if (required) broken(&t, dotted, "is missing");
      return "";
    }
    const auto* s = n->as_string();
    if (!s) broken(n, dotted, "must be a string");
    if (required && s->get().empty()) broken(n, dotted, "must not be empty");
    return s->get();
  }

  std::vector<std::string> strings_at(const toml::table& t, const std::string& key, const std::string& dotted) const {
    std::vector<std::string> out;
    const toml::node* n = t.get(key);
    if (!n) return out;
    const auto* a = n->as_array();
    if (!a) broken(n, dotted, "must be an array of strings");
    for (const auto& e : *a) {
      const auto* s = e.as_string();
      if (!s) broken(&e, dotted, "must hold only strings");
      out.push_back(s->get());
    }
    return out;
  }

  const toml::table& table_at(const toml::node& n, const std::string& dotted) const {
    const auto* t = n.as_table();
    if (!t) broken(&n, dotted, "must be a table");
    return *t;
  }

  // { value = ..., source = "...", note = "...", deviation = "..." }
  ReferenceSetting setting(const toml::node& n, const std::string& dotted) const {
    const toml::table& t = table_at(n, dotted);
    for (const auto& [k, v] : t) {
      const std::string key(k.str());
      if (key != "value" && key != "source" && key != "note" && key != "deviation")
        broken(&v, dotted + "." + key, "is not a setting field (value, source, note, deviation)");
    }
    ReferenceSetting s;
    const toml::node* v = t.get("value");
    if (!v) broken(&t, dotted + ".value", "is missing");
    if (const auto* b = v->as_boolean()) s.value = b->get();
    else if (const auto* i = v->as_integer()) s.value = i->get();
    else if (const auto* f = v->as_floating_point()) s.value = f->get();
    else if (const auto* str = v->as_string()) s.value = str->get();
    else broken(v, dotted + ".value", "must be a boolean, integer, float or string");
    s.source = string_at(t, "source", dotted + ".source", true);
    s.note = string_at(t, "note", dotted + ".note", false);
    s.deviation = string_at(t, "deviation", dotted + ".deviation", false);
    return s;
  }

  std::map<std::string, ReferenceSetting> settings(const toml::node& n, const std::string& dotted) const {
    std::map<std::string, ReferenceSetting> out;
    for (const auto& [k, v] : table_at(n, dotted)) out[std::string(k.str())] = setting(v, dotted + "." + std::string(k.str()));
    return out;
  }

 private:
  std::string file_;
};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Recorded and reference scalars agree: numbers by value (an option recorded
// as 1 or 1.0 is the same), everything else exactly.
bool same_value(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_integer() && b.is_number_integer()) return a.get<int64_t>() == b.get<int64_t>();
    return a.get<double>() == b.get<double>();
  }
  return a == b;
}

}  // namespace

std::string ReferenceEntry::label() const { return mixer + (smoke ? "/smoke/" : "/") + task; }

json ReferenceEntry::values() const {
  json out = json::object();
  for (const auto& [name, s] : settings) out[name] = s.value;
  return out;
}

std::vector<std::string> ReferenceEntry::deviations() const {
  std::vector<std::string> out;
  for (const auto& [name, s] : settings)
    if (!s.deviation.empty()) out.push_back(name + ": " + s.deviation);
  return out;
}

ReferenceTable ReferenceTable::parse(std::string_view text, const std::string& file) {
  const Reader r(file);
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(file));
  } catch (const toml::parse_error& e) {
    throw Error(ErrorKind::internal, "reference table " + file + ", line " +
                                         std::to_string(e.source().begin.line) + ": " + std::string(e.description()) +
                                         " (fix manifests/" + file + " and rebuild)");
  }
  ReferenceTable t;
  t.file_ = file;
  t.sha256_ = sha256_hex(text);
  const std::string schema = r.string_at(root, "schema", "schema", true);
  if (schema != kSchema && schema != kConfigurationSchema)
    r.broken(root.get("schema"), "schema",
             "must be \"" + std::string(kSchema) + "\" or \"" + std::string(kConfigurationSchema) + "\"");
  t.configuration_ = schema == kConfigurationSchema;
  if (t.configuration_) t.label_ = r.string_at(root, "label", "label", true);
  // A configuration's setting names a manifest key or a plugin option.
  auto check_keys = [&](const std::map<std::string, ReferenceSetting>& settings, const toml::node* at,
                        const std::string& where) {
    if (!t.configuration_) return;
    for (const auto& [name, s] : settings) {
      bool ok = false;
      for (const char* prefix : kConfigurationKeyPrefixes) ok = ok || (name.rfind(prefix, 0) == 0 && name.size() > std::string(prefix).size());
      if (!ok) r.broken(at, where + "." + name, "must be a manifest key (model.*, train.*, data.*, rules.*) or mixer.OPTION");
    }
  };
  // The name is the file's own: a copy under another name cannot pass as it.
  const std::string stem = file.size() > kExt.size() ? file.substr(0, file.size() - kExt.size()) : file;
  if (r.string_at(root, "name", "name", true) != stem) r.broken(root.get("name"), "name", "must be \"" + stem + "\"");
  t.protocol_ = r.string_at(root, "protocol", "protocol", true);
  r.string_at(root, "lra_code", "lra_code", true);
  t.tasks_ = r.strings_at(root, "tasks", "tasks");
  if (t.tasks_.empty()) r.broken(&root, "tasks", "must list the tasks the table covers");

  for (const auto& [k, node] : root) {
    const std::string mixer(k.str());
    if (mixer == "schema" || mixer == "name" || mixer == "protocol" || mixer == "lra_code" || mixer == "tasks") continue;
    if (t.configuration_ && mixer == "label") continue;
    if (t.configuration_ && mixer == "every_mixer") {
      t.every_mixer_ = r.settings(node, mixer);
      check_keys(t.every_mixer_, &node, mixer);
      continue;
    }
    const toml::table& section = r.table_at(node, mixer);
    Mixer m;
    bool has_default = false;
    for (const auto& [sk, sv] : section) {
      const std::string key(sk.str()), dotted = mixer + "." + key;
      if (key == "note") {
        m.note = r.string_at(section, key, dotted, true);
      } else if (key == "not_reproduced") {
        m.not_reproduced = r.string_at(section, key, dotted, true);
      } else if (t.configuration_ && key == "conformance_not_checked") {
        m.conformance_not_checked = r.strings_at(section, key, dotted);
      } else if (key == "compute_only" || key == "unused") {
        const auto names = r.strings_at(section, key, dotted);
        m.not_compared.insert(names.begin(), names.end());
      } else if (key == "default") {
        m.defaults = r.settings(sv, dotted);
        has_default = true;
      } else if (key == "smoke") {
        for (const auto& [tk, tv] : r.table_at(sv, dotted)) {
          const std::string task(tk.str());
          if (!contains(t.tasks_, task)) r.broken(&tv, dotted + "." + task, "is not one of the table's tasks");
          m.smoke[task] = r.settings(tv, dotted + "." + task);
        }
      } else if (contains(t.tasks_, key)) {
        m.tasks[key] = r.settings(sv, dotted);
      } else {
        r.broken(&sv, dotted, "is neither a task of the table nor note, not_reproduced, compute_only, unused, default or smoke");
      }
    }
    if (!has_default) r.broken(&section, mixer + ".default", "is missing (an empty [" + mixer + ".default] is fine)");
    // Every task must see every option the mixer sets anywhere: an option
    // outside [<mixer>.default] is set by every task's section (reformer's
    // chunk_len), else a task would silently run the plugin's default.
    auto in_every_task = [&](const std::string& name) {
      for (const auto& task : t.tasks_) {
        const auto it = m.tasks.find(task);
        if (it == m.tasks.end() || !it->second.count(name)) return false;
      }
      return true;
    };
    auto known = [&](const std::map<std::string, ReferenceSetting>& overrides, const std::string& where) {
      for (const auto& [name, s] : overrides)
        if (!m.defaults.count(name) && !in_every_task(name))
          r.broken(section.get("default"), where + "." + name,
                   "is set for some tasks only: give it a value in " + mixer + ".default or in every task's section");
    };
    // A configuration's unset key keeps the manifest's value: no such rule.
    if (!t.configuration_) {
      for (const auto& [task, o] : m.tasks) known(o, mixer + "." + task);
      for (const auto& [task, o] : m.smoke) known(o, mixer + ".smoke." + task);
    }
    check_keys(m.defaults, section.get("default"), mixer + ".default");
    for (const auto& [task, o] : m.tasks) check_keys(o, section.get(task), mixer + "." + task);
    for (const auto& [task, o] : m.smoke) check_keys(o, section.get("smoke"), mixer + ".smoke." + task);
    for (const auto& name : m.not_compared)
      if (m.defaults.count(name) || in_every_task(name))
        r.broken(&section, mixer + ".compute_only/unused", "names '" + name + "', which the table also sets");
    t.mixers_[mixer] = std::move(m);
  }
  return t;
}

std::vector<std::string> ReferenceTable::mixers() const {
  std::vector<std::string> out;
  for (const auto& [name, m] : mixers_) out.push_back(name);
  return out;
}

std::optional<ReferenceEntry> ReferenceTable::entry(const std::string& mixer, const std::string& task,
                                                    bool smoke) const {
  const auto it = mixers_.find(mixer);
  if (it == mixers_.end() || !contains(tasks_, task)) return std::nullopt;
  const Mixer& m = it->second;
  ReferenceEntry e{mixer, task, smoke, every_mixer_, m.not_compared, m.note, m.not_reproduced,
                   m.conformance_not_checked};
  for (const auto& [name, s] : m.defaults) e.settings[name] = s;
  auto overlay = [&](const std::map<std::string, std::map<std::string, ReferenceSetting>>& by_task) {
    if (const auto o = by_task.find(task); o != by_task.end())
      for (const auto& [name, s] : o->second) e.settings[name] = s;
  };
  overlay(m.tasks);
  if (smoke) overlay(m.smoke);
  return e;
}

std::vector<std::string> reference_differences(const ReferenceEntry& entry, const json& recorded) {
  std::set<std::string> out;
  for (const auto& [name, s] : entry.settings) {
    const bool present = recorded.is_object() && recorded.contains(name);
    if (!present || !same_value(recorded.at(name), s.value)) out.insert(name);
  }
  if (recorded.is_object())
    for (const auto& [name, value] : recorded.items())
      if (!entry.settings.count(name) && !entry.not_compared.count(name)) out.insert(name);
  return {out.begin(), out.end()};
}

std::vector<std::string> configuration_changes(const ReferenceEntry& entry, const json& config, const json& options) {
  std::vector<std::string> out;  // entry.settings is a map: sorted already
  for (const auto& [key, s] : entry.settings) {
    const json* have = nullptr;
    const auto dot = key.find('.');
    const std::string section = key.substr(0, dot), field = key.substr(dot + 1);
    if (section == "mixer") {
      if (options.is_object() && options.contains(field)) have = &options.at(field);
    } else if (config.is_object() && config.contains(section) && config.at(section).is_object() &&
               config.at(section).contains(field)) {
      have = &config.at(section).at(field);
    }
    if (!have || !same_value(*have, s.value)) out.push_back(key);
  }
  return out;
}

std::string describe_reference_configuration(const json& record) {
  if (!record.is_object()) return "";
  std::string out = record.value("label", std::string("reference configuration")) + " (" +
                    record.value("table", std::string("?")) + ", entry " + record.value("entry", std::string("?")) + ")";
  if (record.contains("changed") && record["changed"].is_array() && !record["changed"].empty()) {
    std::string keys;
    for (const auto& k : record["changed"]) keys += (keys.empty() ? "" : ", ") + (k.is_string() ? k.get<std::string>() : k.dump());
    out += "; changed by --set: " + keys;
  }
  return out;
}

std::string setting_text(const json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

bool is_smoke_manifest(const std::string& manifest_name) { return manifest_name.rfind("smoke/", 0) == 0; }

const ReferenceTable* find_reference_table(const std::string& file) {
  // Parsed on first use; every embedded table is checked then, so a broken one
  // fails the first run that needs any of them (and the table tests).
  static std::once_flag once;
  static std::map<std::string, ReferenceTable> tables;
  std::call_once(once, [] {
    for (const auto& f : embedded_reference_tables()) tables.emplace(f.name, ReferenceTable::parse(f.text, f.name));
  });
  const auto it = tables.find(file);
  return it == tables.end() ? nullptr : &it->second;
}

namespace {

// Each embedded configuration's name, file and version: lra-table1.toml is
// "table1" version {0}, lra-table1.1.toml "table1.1" version {1}.
struct ConfigurationFile {
  std::string family, file;
  std::vector<int> version;
};

std::vector<ConfigurationFile> configuration_files() {
  std::vector<ConfigurationFile> out;
  const std::string prefix = std::string(kReferenceConfigurationDir) + "lra-";
  for (const auto& f : embedded_reference_tables()) {
    const std::string file = f.name;
    if (file.rfind(prefix, 0) != 0 || file.size() <= prefix.size() + kExt.size()) continue;
    const std::string stem = file.substr(prefix.size(), file.size() - prefix.size() - kExt.size());
    ConfigurationFile c{stem.substr(0, stem.find('.')), file, {}};
    if (stem.find('.') == std::string::npos) c.version = {0};
    for (size_t at = stem.find('.'); at != std::string::npos; at = stem.find('.', at + 1)) {
      const size_t end = stem.find('.', at + 1);
      const std::string part = stem.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
      if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) { c.version.clear(); break; }
      c.version.push_back(std::stoi(part));
    }
    if (!c.version.empty()) out.push_back(std::move(c));
  }
  return out;
}

std::string version_text(const std::vector<int>& v) {
  std::string out;
  for (int n : v) out += "." + std::to_string(n);
  return out;
}

}  // namespace

std::vector<std::string> reference_configuration_names() {
  std::vector<std::string> out;
  for (const auto& c : configuration_files()) {
    if (std::find(out.begin(), out.end(), c.family) == out.end()) out.push_back(c.family);
    out.push_back(c.family + version_text(c.version));
  }
  return out;
}

const ReferenceTable& reference_configuration(const std::string& name) {
  // A family name ("table1") is its newest version; "table1.0" the first
  // file (lra-table1.toml), "table1.1" lra-table1.1.toml.
  const ConfigurationFile* chosen = nullptr;
  const auto files = configuration_files();
  for (const auto& c : files) {
    const bool named = name == c.family ? (!chosen || c.version > chosen->version)
                                        : name == c.family + version_text(c.version);
    if (named) chosen = &c;
  }
  const ReferenceTable* t = chosen ? find_reference_table(chosen->file) : nullptr;
  if (!t || !t->is_configuration()) {
    std::string known;
    for (const auto& n : reference_configuration_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::usage, "unknown reference configuration '" + name + "' (known: " +
                                      (known.empty() ? "none" : known) + "; docs/mixers.md lists what each sets)");
  }
  return *t;
}

const ReferenceTable& reference_table() {
  const ReferenceTable* t = find_reference_table(kReferenceTableFile);
  if (!t)
    throw Error(ErrorKind::internal, std::string("reference table ") + kReferenceTableFile +
                                         " is not compiled into this host (rebuild from a complete checkout)");
  return *t;
}

std::vector<std::string> settings_table_names() {
  std::vector<std::string> out;
  for (const auto& f : embedded_reference_tables())
    if (const ReferenceTable* t = find_reference_table(f.name); t && !t->is_configuration()) out.emplace_back(f.name);
  return out;
}

const ReferenceTable& reference_table_named(const std::string& manifest_key) {
  const std::string file = manifest_key.empty() ? kTableOfManifestsWithoutKey : manifest_key;
  const ReferenceTable* t = find_reference_table(file);
  if (t && !t->is_configuration()) return *t;
  std::string known;
  for (const auto& n : settings_table_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorKind::rules, "rules.reference_settings = \"" + file + "\": " +
                                    (t ? "a reference configuration (run --reference), not a settings table"
                                       : "not a reference settings table this host compiles in") +
                                    "; expected one of: " + known + " (docs/releases.md)");
}

const ReferenceTable* reference_table_of_result(const json& result) {
  if (const json* named = json_at(result, {"config", "rules", "reference_settings"}); named && named->is_string()) {
    const ReferenceTable* t = find_reference_table(named->get<std::string>());
    return t && !t->is_configuration() ? t : nullptr;
  }
  if (const json* claimed = json_at(result, {"plugin", "reference_settings", "table"}); claimed && claimed->is_string())
    for (const char* before : kTablesBeforeTheManifestKey)
      if (claimed->get<std::string>() == before) return find_reference_table(before);
  return find_reference_table(kTableOfManifestsWithoutKey);
}

}  // namespace lra::host
