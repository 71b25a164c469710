#include "results/closed_checks.h"

#include "common/json_input.h"
#include "lra/task.h"
#include "results/field_checker.h"

namespace lra::host {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxListed = 40;

std::string show(const json& v) { return verify_internal::show(v, 60); }

// Leaves of `want` that `have` does not match, as "path is X, ... says Y".
void compare(const json& have, const json& want, const json& defaults, const std::string& path,
             std::vector<std::string>* diffs) {
  if (want.is_object()) {
    if (!have.is_object()) {
      diffs->push_back(path + " is " + show(have) + ", expected an object");
      return;
    }
    // The model and training first: they matter most to a reader.
    std::vector<std::string> keys;
    for (const char* first : {"model", "train"})
      if (want.contains(first)) keys.emplace_back(first);
    for (const auto& [key, value] : want.items())
      if (key != "model" && key != "train") keys.push_back(key);
    for (const auto& key : keys) {
      const json& value = want[key];
      const std::string sub = path + "." + key;
      const json* d = defaults.is_object() && defaults.contains(key) ? &defaults[key] : nullptr;
      if (!have.contains(key)) {
        // A key added to the host after the result was written: absent is fine
        // when the manifest leaves it at the value older hosts implied.
        if (d && *d == value) continue;
        diffs->push_back(sub + " is missing, the official manifest says " + show(value));
        continue;
      }
      compare(have[key], value, d ? *d : json(), sub, diffs);
    }
    for (const auto& [key, value] : have.items())
      if (!want.contains(key)) diffs->push_back(path + "." + key + " is " + show(value) + ", which the official manifest does not have");
    return;
  }
  // Numbers compare by value (5000 and 5000.0 are one setting).
  if (want.is_number() && have.is_number()) {
    if (want.get<double>() != have.get<double>()) diffs->push_back(path + " is " + show(have) + ", the official manifest says " + show(want));
    return;
  }
  if (have != want) diffs->push_back(path + " is " + show(have) + ", the official manifest says " + show(want));
}


// A [grid] axis ("model.d_model") whose recorded value is one of the official
// grid's values compares as that value: each point is the protocol's own.
void free_grid_axes(const json& have, json& want) {
  const json* grid = json_at(want, {"grid"});
  if (!grid || !grid->is_object()) return;
  for (const auto& [key, values] : grid->items()) {
    const auto dot = key.find('.');
    if (dot == std::string::npos || !values.is_array()) continue;
    const std::string section = key.substr(0, dot), name = key.substr(dot + 1);
    const json* value = json_at(have, {section.c_str(), name.c_str()});
    if (!value || !value->is_number() || !want.contains(section) || !want[section].is_object()) continue;
    for (const auto& v : values)
      if (v.is_number() && v.get<double>() == value->get<double>()) want[section][name] = *value;
  }
}

// A [settings] protocol: a configuration that names one of the official
// settings compares with the official manifest at that setting (its changes
// applied), so each of the protocol's own variants is closed and nothing else is.
void apply_official_setting(const json& have, json& want) {
  const json* settings = json_at(want, {"settings"});
  const json* setting = json_at(have, {"setting"});
  if (!settings || !settings->is_object() || !setting || !setting->is_string()) return;
  const auto it = settings->find(setting->get<std::string>());
  if (it == settings->end() || !it->is_object()) return;
  for (const auto& [key, value] : it->items()) {
    const auto dot = key.find('.');
    if (dot == std::string::npos) continue;
    const std::string section = key.substr(0, dot), name = key.substr(dot + 1);
    if (want.contains(section) && want[section].is_object()) want[section][name] = value;
  }
  want["setting"] = *setting;
}

}  // namespace

bool check_closed_against_protocol(const json& result, const OfficialManifest& official,
                                   std::vector<std::string>* reasons) {
  const std::size_t before = reasons->size();
  const std::string which = "release " + official.release;

  // 1. The configuration: the manifest's, with the trial seed free and each
  //    [grid] axis free among its values (a point of the protocol's grid).
  bool config_official = false;
  if (!official.config.is_null()) {
    const json* config = json_at(result, {"config"});
    if (config && config->is_object()) {
      json want = official.config;
      json have = *config;
      const json* seed = json_at(result, {"seed"});
      const json* train_seed = json_at(have, {"train", "seed"});
      if (seed && train_seed && *seed != *train_seed)
        reasons->push_back("config.train.seed " + show(*train_seed) + " is not the result's seed " + show(*seed));
      if (want.contains("train") && want["train"].is_object() && train_seed) want["train"]["seed"] = *train_seed;
      free_grid_axes(have, want);
      apply_official_setting(have, want);
      std::vector<std::string> diffs;
      compare(have, want, official.defaults, "config", &diffs);
      if (!diffs.empty()) {
        std::string list;
        for (std::size_t i = 0; i < diffs.size() && i < kMaxListed; ++i) list += (i ? "; " : "") + diffs[i];
        if (diffs.size() > kMaxListed) list += "; and " + std::to_string(diffs.size() - kMaxListed) + " more";
        reasons->push_back("division is \"closed\" but config is not the official manifest's (" + which + "): " + list);
      }
      config_official = diffs.empty();
    }
  }

  // The official data: the baseline's, or (a configuration that matched the
  // official one at a setting) that setting's.
  OfficialManifest::SettingData data{official.train_examples, official.val_examples, official.test_examples,
                                     official.data_fingerprint};
  if (const json* setting = json_at(result, {"config", "setting"}); config_official && setting && setting->is_string())
    if (const auto it = official.setting_data.find(setting->get<std::string>()); it != official.setting_data.end())
      data = it->second;

  // 2. The split sizes.
  if (data.test_examples > 0) {
    const std::pair<const char*, int64_t> splits[] = {
        {"train", data.train_examples}, {"val", data.val_examples}, {"test", data.test_examples}};
    for (const auto& [name, want] : splits) {
      const json* have = json_at(result, {"task", "examples", name});
      if (!have || !have->is_number_integer() || have->get<int64_t>() != want)
        reasons->push_back("division is \"closed\" but task.examples." + std::string(name) + " is " +
                           (have ? show(*have) : std::string("missing")) + ", the official " +
                           json_at(result, {"task", "name"})->get<std::string>() + " data (" + which + ") have " +
                           std::to_string(want));
    }
  }

  // 3. The data themselves, where the host can know them: data an lrahost
  //    generator wrote. LRA's own release files (task.lra_release_files) are
  //    checked on their counts, as downloaded data are; results from before
  //    the field keep the fingerprint check.
  const json* release_files = json_at(result, {"task", "lra_release_files"});
  if (release_files && !release_files->is_boolean())
    reasons->push_back("task.lra_release_files must be true or false, found " + show(*release_files));
  bool lra_release = release_files && release_files->is_boolean() && release_files->get<bool>();
  if (lra_release) {  // the two fields a run writes together must agree; if not, the fingerprint decides too
    const json* src = json_at(result, {"task", "data_source"});
    if (!src || !src->is_string() || src->get<std::string>().rfind(lra::kLraReleaseSource, 0) != 0) {
      reasons->push_back("task.lra_release_files is true but task.data_source " +
                         (src ? show(*src) + " does not name LRA's release files" : std::string("is missing")));
      lra_release = false;
    }
  }
  if (!data.data_fingerprint.empty() && !lra_release) {
    const json* fp = json_at(result, {"task", "data_fingerprint"});
    if (!fp || !fp->is_string() || fp->get<std::string>() != data.data_fingerprint)
      reasons->push_back("division is \"closed\" but task.data_fingerprint is " + (fp ? fp->dump() : std::string("missing")) +
                         ", not the fingerprint of the official data (" + which + ": " + data.data_fingerprint +
                         "); the run trained on other data");
  }
  // 4. The parameter budget's inputs: the reference model is the protocol's,
  //    so a closed claim cannot enlarge its own budget.
  const json* recorded_ref = json_at(result, {"rules", "reference_params"});
  int64_t reference = official.reference_params;
  if (official.reference_params_at && config_official) reference = official.reference_params_at(*json_at(result, {"config"}));
  if (reference > 0 &&
      !(recorded_ref && recorded_ref->is_number_integer() && recorded_ref->get<int64_t>() == reference))
    reasons->push_back("division is \"closed\" but rules.reference_params is " +
                       (recorded_ref ? show(*recorded_ref) : std::string("missing")) +
                       ", the reference Transformer of the official manifest (" + which + ") has " +
                       std::to_string(reference) + " parameters");
  const json* want_ratio = json_at(official.config, {"rules", "param_budget_ratio"});
  const json* recorded_ratio = json_at(result, {"rules", "param_budget_ratio"});
  if (want_ratio && want_ratio->is_number() &&
      !(recorded_ratio && recorded_ratio->is_number() && recorded_ratio->get<double>() == want_ratio->get<double>()))
    reasons->push_back("division is \"closed\" but rules.param_budget_ratio is " +
                       (recorded_ratio ? show(*recorded_ratio) : std::string("missing")) +
                       ", the official manifest (" + which + ") says " + show(*want_ratio));
  return reasons->size() == before;
}

}  // namespace lra::host
