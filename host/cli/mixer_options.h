// A mixer plugin's declared options, filled with defaults and overlaid with
// the user's `--set mixer.NAME=VALUE` values (typed by the declaration).
#pragma once

#include <map>
#include <string>

#include "lra/options.h"
#include "plugins/loader.h"

namespace lra::host {

lra::Params resolve_mixer_options(const LoadedPlugin& mixer, const std::map<std::string, std::string>& given);

// Parses VALUE as the type of `like` ("true"/"false", integers, floats, text).
lra::Value parse_typed(const std::string& text, const lra::Value& like, const std::string& key);

}  // namespace lra::host
