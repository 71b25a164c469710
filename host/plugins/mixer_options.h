// plugins/mixer_options.h — a mixer plugin's declared options, filled with defaults and overlaid with
// the user's `--set mixer.NAME=VALUE` values (typed by the declaration); for
// `run` with a built-in mixer, the LRA reference settings of the task come in
// between (reference/reference_mixers.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lra/options.h"
#include "manifest/manifest.h"
#include "plugins/loader.h"

namespace lra::host {

lra::Params resolve_mixer_options(const LoadedPlugin& mixer, const std::map<std::string, std::string>& given);

// A run's mixer options and what the reference settings did to them.
struct RunMixerOptions {
  lra::Params options;
  // result.json's plugin.reference_settings: null for a plugin that is not
  // built-in; otherwise {"table", "sha256", "entry" (e.g. "performer/listops",
  // null when the task has none), "settings" (the entry's values), "applied"
  // (options the entry set away from the plugin's defaults), "changed"
  // (options whose final value is not the entry's: the user's --set),
  // "used" (an entry exists and nothing changed), "deviations" (the entry's
  // labelled departures from what LRA ran)}.
  nlohmann::json reference_settings;
};

// For `run`: the plugin's declared defaults; for a built-in mixer (a plugin
// in builtin_plugin_dir() whose name the manifest's reference table knows:
// rules.reference_settings, reference_table_named) the entry of its task, with
// the smoke overrides when the manifest is a smoke one ("smoke/<task>"); then
// `given` (--set mixer.X) on top, which always wins. A table option the plugin
// does not declare, or of another type, is lra::Error(internal) (a table out
// of step with its plugin).
RunMixerOptions resolve_run_mixer_options(const LoadedPlugin& mixer, const std::map<std::string, std::string>& given,
                                          const Manifest& manifest);

// One line for the run log: which entry set what and what --set changed
// ("" for a plugin that is not built-in).
std::string describe_reference_settings(const nlohmann::json& reference_settings);

// Splits --set assignments: "mixer.KEY=VALUE" go to the plugin's options
// (returned); every other one is applied to the manifest (apply_override) and
// appended to *applied, in order — except a point of the manifest's [grid],
// which is the protocol's own choice (grid_point(manifest) lists it), and
// assignments that together are exactly one of its [settings] (settle_setting:
// manifest.setting names it).
std::map<std::string, std::string> apply_sets(const std::vector<std::string>& sets, Manifest& manifest,
                                              std::vector<std::string>* applied);

// The options as a JSON object (result.json's plugin.options).
nlohmann::json params_json(const lra::Params& p);

// Parses VALUE as the type of `like` ("true"/"false", integers, floats, text).
lra::Value parse_typed(const std::string& text, const lra::Value& like, const std::string& key);

}  // namespace lra::host
