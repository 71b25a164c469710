// reference/reference_mixers.h — the LRA reference settings of the built-in
// mixers: a versioned table (manifests/reference-mixers/<version>.toml,
// compiled into the host) giving, per mixer and task, the options that
// reproduce what LRA ran for Table 1, each with the LRA source it comes from
// and, where LRA's own setting breaks its 10% parameter rule, the labelled
// nearest setting inside it.
//
// No LibTorch: `run` applies an entry (plugins/mixer_options), and the
// leaderboard compares recorded options with it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lra::host {

// Which table a run applies is the manifest's to say: rules.reference_settings
// names one by its name relative to manifests/ (added in lra-v1.3, whose
// manifests name kReferenceTableFile). A manifest without the key (every
// release before lra-v1.3, and any manifest written for them) runs under
// kTableOfManifestsWithoutKey, as those releases always did.
inline constexpr const char* kReferenceTableFile = "reference-mixers/lra-v1.3.toml";  // the newest
inline constexpr const char* kTableOfManifestsWithoutKey = "reference-mixers/lra-v1.2.toml";
// The tables runs recorded before manifests named one: a result whose config
// names no table may have been compared with any of them (the one its host had).
inline constexpr const char* kTablesBeforeTheManifestKey[] = {
    "reference-mixers/lra-v1.toml", "reference-mixers/lra-v1.1.toml", "reference-mixers/lra-v1.2.toml"};

// Reference configurations (manifests/reference-configurations/<name>.toml)
// use the same layout for a named, open way of running the built-in mixers
// as a paper ran them (`run --reference table1`): their settings are manifest
// keys ("model.heads", "train.weight_decay", "rules.param_budget_ratio") and
// plugin options ("mixer.mask_keys"); an [every_mixer] section holds what
// every entry sets, and a mixer may name conformance checks its settings are
// known to fail (`conformance_not_checked`).
inline constexpr const char* kReferenceConfigurationDir = "reference-configurations/";

// One option of an entry and where it comes from.
struct ReferenceSetting {
  nlohmann::json value;   // a boolean, integer, float or string, typed as the plugin declares the option
  std::string source;     // LRA file:line and what it says there
  std::string note;       // "" when there is nothing to add
  std::string deviation;  // "" when this is what LRA ran; else where it differs and why
};

// What one built-in mixer runs with on one task: its default section, the
// task's overrides, then (smoke preset) the smoke overrides.
struct ReferenceEntry {
  std::string mixer, task;
  bool smoke = false;
  std::map<std::string, ReferenceSetting> settings;  // by option name
  // Options not compared with the reference: `compute_only` ones change memory
  // or speed only, `unused` ones have no effect under these settings.
  std::set<std::string> not_compared;
  std::string note;                                  // the mixer's note, "" when none
  std::string not_reproduced;                        // LRA code behaviour the plugin does not copy
  // Configurations only: conformance checks (plugins/conformance.h names) the
  // entry's settings are known to fail, e.g. "padding_mask" where the mixer
  // reproduces LRA's unmasked keys.
  std::vector<std::string> conformance_not_checked;

  std::string label() const;                 // "performer/listops", "linformer/smoke/image"
  nlohmann::json values() const;             // {option: value}
  std::vector<std::string> deviations() const;  // "option: why", for the options that deviate
};

class ReferenceTable {
 public:
  // Parses and checks table text (`file`: its name relative to manifests/).
  // Anything malformed — unknown keys, a task outside `tasks`, an option
  // without a value or a source — is lra::Error(internal) naming the file,
  // the key and its line: the table ships inside the host, so a bad one is a
  // broken build, not a user error.
  static ReferenceTable parse(std::string_view text, const std::string& file);

  const std::string& file() const { return file_; }
  const std::string& sha256() const { return sha256_; }  // of the file's bytes
  const std::string& protocol() const { return protocol_; }
  bool is_configuration() const { return configuration_; }  // a reference configuration, not a settings table
  const std::string& label() const { return label_; }        // configurations: "LRA Table 1 configuration"
  const std::vector<std::string>& tasks() const { return tasks_; }
  std::vector<std::string> mixers() const;
  bool has_mixer(const std::string& mixer) const { return mixers_.count(mixer) != 0; }

  // The entry of `mixer` on `task` (smoke: with the smoke overrides); nullopt
  // when the mixer is not in the table or the task is not one of tasks().
  std::optional<ReferenceEntry> entry(const std::string& mixer, const std::string& task, bool smoke) const;

 private:
  struct Mixer {
    std::map<std::string, ReferenceSetting> defaults;
    std::map<std::string, std::map<std::string, ReferenceSetting>> tasks, smoke;
    std::set<std::string> not_compared;
    std::string note, not_reproduced;
    std::vector<std::string> conformance_not_checked;
  };
  std::string file_, sha256_, protocol_, label_;
  bool configuration_ = false;
  std::map<std::string, ReferenceSetting> every_mixer_;  // configurations: settings of every entry
  std::vector<std::string> tasks_;
  std::map<std::string, Mixer> mixers_;
};

// The options in `recorded` (a result's plugin.options) that keep it from
// being the entry's settings, sorted: an entry option with another value or
// missing, or a recorded option the entry does not know (not_compared ones
// excepted). Integers and floats compare by value. Empty: the reference.
std::vector<std::string> reference_differences(const ReferenceEntry& entry, const nlohmann::json& recorded);

// Reference configurations: the settings of `entry` whose value in (config,
// options) is not the entry's, sorted; run records them and verify recomputes
// them. "model.heads" reads config["model"]["heads"] (config: a result's
// `config`, the manifest as run), "mixer.mask_keys" reads options["mask_keys"]
// (a result's plugin.options).
std::vector<std::string> configuration_changes(const ReferenceEntry& entry, const nlohmann::json& config,
                                               const nlohmann::json& options);

// A result's reference_configuration record in words, for division reasons,
// run.log, verify and the leaderboard: "LRA Table 1 configuration
// (reference-configurations/lra-table1.toml, entry local/image)", plus
// "; changed by --set: model.heads" when the user changed some of it.
std::string describe_reference_configuration(const nlohmann::json& record);

// A setting's value as --set writes it: text raw, numbers and booleans as JSON.
std::string setting_text(const nlohmann::json& value);

// True for a manifest name of the smoke preset ("smoke/listops"), whose runs
// take the table's smoke overrides.
bool is_smoke_manifest(const std::string& manifest_name);

// The tables compiled into the host, parsed once (a broken one throws as parse()).
const ReferenceTable& reference_table();                              // kReferenceTableFile, the newest
const ReferenceTable* find_reference_table(const std::string& file);  // nullptr when not embedded

// The settings table a manifest's rules.reference_settings names ("" = none:
// kTableOfManifestsWithoutKey). A name that is not an embedded settings table
// (a configuration, a made-up file) is lra::Error(rules) naming the value and
// the tables there are.
const ReferenceTable& reference_table_named(const std::string& manifest_key);
std::vector<std::string> settings_table_names();  // the embedded settings tables, sorted

// The settings table a result is compared with: the one its recorded config
// names (config.rules.reference_settings), never the one the result claims;
// for a config that names none, the claimed table when it is one of
// kTablesBeforeTheManifestKey, else kTableOfManifestsWithoutKey. nullptr when
// the config names a table this host does not compile in (a newer host's).
const ReferenceTable* reference_table_of_result(const nlohmann::json& result);

// The configuration `run --reference NAME` names. Files are versioned:
// reference-configurations/lra-table1.toml is "table1.0", lra-table1.1.toml
// "table1.1" (and so on); the family name "table1" is its newest version. An unknown
// name is lra::Error(usage) listing the known ones.
const ReferenceTable& reference_configuration(const std::string& name);
std::vector<std::string> reference_configuration_names();  // "table1", "table1.0", "table1.1", ...

}  // namespace lra::host
