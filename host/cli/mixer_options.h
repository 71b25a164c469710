// A mixer plugin's declared options, filled with defaults and overlaid with
// the user's `--set mixer.NAME=VALUE` values (typed by the declaration).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lra/options.h"
#include "manifest/manifest.h"
#include "plugins/loader.h"

namespace lra::host {

lra::Params resolve_mixer_options(const LoadedPlugin& mixer, const std::map<std::string, std::string>& given);

// Parses VALUE as the type of `like` ("true"/"false", integers, floats, text).
// Splits --set assignments: "mixer.KEY=VALUE" go to the plugin's options
// (returned); every other one is applied to the manifest (apply_override) and
// appended to *applied, in order.
std::map<std::string, std::string> apply_sets(const std::vector<std::string>& sets, Manifest& manifest,
                                              std::vector<std::string>* applied);

lra::Value parse_typed(const std::string& text, const lra::Value& like, const std::string& key);

}  // namespace lra::host
