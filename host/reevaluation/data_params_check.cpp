#include "reevaluation/data_params_check.h"

#include <map>
#include <vector>

#include "common/json_input.h"
#include "lra/status.h"
#include "manifest/embedded.h"
#include "manifest/manifest.h"
#include "manifest/presets.h"
#include "manifest/releases.h"

namespace lra::host {
namespace {

using nlohmann::json;

// A manifest's [data] as `run` records it (to_json: one conversion for both), with its name for messages.
struct KnownData {
  std::string file;
  json data;
};

// Every embedded manifest of `task` a result could have been made under: each
// released official manifest (every release, old ones too) and the smoke one.
std::vector<KnownData> task_manifests(const std::string& task) {
  std::vector<std::string> files;
  for (const auto& rm : released_manifests())
    if (rm.task == task) files.push_back(rm.file);
  for (const auto& t : preset_tasks("smoke"))
    if (t == task) files.push_back(preset_file(task, "smoke"));
  std::vector<KnownData> out;
  for (const auto& f : files) {
    const EmbeddedFile* e = find_embedded(f);
    if (!e) continue;  // releases.cpp already refuses a registry naming a file that is not embedded
    out.push_back({f, to_json(parse_manifest(e->text, "builtin:" + f))["data"]});
  }
  return out;
}

bool has_data_override(const json& result) {
  const json* overrides = json_at(result, {"overrides"});
  if (!overrides || !overrides->is_array()) return false;
  for (const auto& o : *overrides)
    if (o.is_string() && o.get<std::string>().rfind("data.", 0) == 0) return true;
  return false;
}

// Exactly the official [data]: no key missing, none added, every value equal.
std::optional<std::string> differs_from_official(const json& given, const ReleasedManifest& rm, const json& official,
                                                 const std::string& why_official) {
  const std::string whose = "the official [data] of " + rm.file + " (release " + rm.version + ", " + why_official + ")";
  for (const auto& [key, want] : official.items()) {
    if (!given.contains(key)) return "task.data_params." + key + " is missing; " + whose + " sets " + want.dump();
    if (given[key] != want)
      return "task.data_params." + key + " = " + given[key].dump() + " is not " + whose + "'s " + want.dump();
  }
  for (const auto& [key, v] : given.items())
    if (!official.contains(key)) return "task.data_params." + key + " = " + v.dump() + " is not a key of " + whose;
  return std::nullopt;
}

// Open results: known keys, scalars, sizes no larger than any manifest of the task asks for.
std::optional<std::string> outside_caps(const json& given, const std::string& task,
                                        const std::vector<KnownData>& known) {
  std::map<std::string, std::pair<json, std::string>> cap;  // key -> (largest number, manifest that sets it)
  std::map<std::string, bool> key_known;
  std::string keys;
  for (const auto& k : known)
    for (const auto& [key, v] : k.data.items()) {
      if (!key_known[key]) keys += (keys.empty() ? "" : ", ") + key;
      key_known[key] = true;
      if (v.is_number() && (!cap.count(key) || v.get<double>() > cap[key].first.get<double>())) cap[key] = {v, k.file};
    }
  for (const auto& [key, v] : given.items()) {
    const std::string field = "task.data_params." + key;
    if (!key_known[key])
      return field + " = " + v.dump() + " is not a data key any manifest of task '" + task + "' sets (known: " + keys +
             ")";
    if (!v.is_primitive() || v.is_null()) return field + " = " + v.dump() + " is not a scalar";
    // A generator seed is a choice of data, not an amount of it: any value is as cheap as another.
    if (!v.is_number() || key == "seed") continue;
    const auto it = cap.find(key);
    if (it == cap.end()) return field + " = " + v.dump() + " is a number where the manifests of task '" + task + "' set text";
    if (v.get<double>() > it->second.first.get<double>())
      return field + " = " + v.dump() + " is above the cap of " + it->second.first.dump() +
             " for an open result (the largest value of data." + key + " in a manifest of task '" + task + "': " +
             it->second.second + "); a verifier makes no more data than a released or smoke manifest asks for";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_result_data_params(const json& result) {
  const json* name = json_at(result, {"task", "name"});
  if (!name || !name->is_string()) return std::string("task.name is missing or not a string");
  const std::string task = name->get<std::string>();
  const json* dp = json_at(result, {"task", "data_params"});
  const json given = dp ? *dp : json::object();
  if (!given.is_object()) return "task.data_params is not an object: " + given.dump();
  const std::vector<KnownData> known = task_manifests(task);
  if (known.empty())
    return "task '" + task + "' has no manifest on this host, so no data parameters of it can be checked";

  const json* claimed = json_at(result, {"division"});
  const bool closed = claimed && *claimed == "closed";
  const json* sha = json_at(result, {"task", "manifest_sha256"});
  const auto rm = sha && sha->is_string() ? find_release(task, sha->get<std::string>()) : std::nullopt;
  if (closed && !rm)
    return "the result claims closed, but task.manifest_sha256 " + (sha ? sha->dump() : std::string("(missing)")) +
           " is not a released official manifest of task '" + task + "', so there is no official [data] to use";
  if (rm && (closed || !has_data_override(result))) {
    for (const auto& k : known)
      if (k.file == rm->file)
        return differs_from_official(given, *rm, k.data,
                                     closed ? "the result claims closed" : "the manifest it names, with no data.* override");
  }
  return outside_caps(given, task, known);
}

void require_result_data_params(const json& result, const std::string& where) {
  if (auto why = check_result_data_params(result))
    throw Error(ErrorKind::data, where + ": " + *why + "; nothing was generated or loaded for it");
}

}  // namespace lra::host
