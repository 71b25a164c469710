// plugins/reference_configuration.h — `run --reference NAME`: a built-in mixer
// run as a paper ran it (manifests/reference-configurations/lra-NAME.toml,
// e.g. the LRA Table 1 configuration), with the entry's manifest settings
// applied as overrides and its plugin options set, the run open and labelled.
//
// The entry's values come first; the user's --set comes after and wins, and
// the record says which settings it changed (`changed`), so a result under a
// changed configuration never passes for the configuration itself.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lra/options.h"
#include "manifest/manifest.h"
#include "plugins/loader.h"
#include "reference/reference_mixers.h"

namespace lra::host {

struct ReferenceConfigurationRun {
  std::string name;  // "table1"
  const ReferenceTable* table = nullptr;
  ReferenceEntry entry;
  std::map<std::string, std::string> mixer_options;  // the entry's plugin options as --set mixer.X would give them
  std::vector<std::string> manifest_overrides;      // the entry's manifest settings, "key=value", applied in order
};

// Looks up the configuration and the entry of `mixer` (built-in only) on
// `task`, and applies the entry's manifest settings to `manifest`, appending
// them to *overrides. Usage errors (exit 2): an unknown configuration, a
// plugin that is not a built-in mixer the configuration covers, a task it
// does not cover.
ReferenceConfigurationRun apply_reference_configuration(const std::string& name, const LoadedPlugin& mixer,
                                                        const std::string& task, Manifest& manifest,
                                                        std::vector<std::string>* overrides);

// `given` (the user's --set mixer.X) over the entry's options: the map to resolve.
std::map<std::string, std::string> with_configuration_options(const ReferenceConfigurationRun& c,
                                                               const std::map<std::string, std::string>& given);

// result.json's reference_configuration: {name, label, table, sha256, entry,
// settings {key: value}, changed [keys whose final value is not the entry's],
// conformance_not_checked [...]}. `config` is to_json(final manifest),
// `options` the final plugin options (params_json); `changed` comes from
// configuration_changes (reference/reference_mixers.h), as verify computes it.
nlohmann::json reference_configuration_record(const ReferenceConfigurationRun& c, const nlohmann::json& config,
                                              const nlohmann::json& options);

}  // namespace lra::host
