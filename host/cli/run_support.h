// Pieces every training command shares (`run`, `forget`): clock stamps,
// device choice, the console logger, peak memory, and building a plugin's
// mixers with its resolved options.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>
#include <torch/types.h>

#include "lra/options.h"
#include "model/backbone.h"
#include "plugins/loader.h"

namespace lra::host {

std::string utc_now(const char* fmt = "%Y-%m-%dT%H:%M:%SZ");
nlohmann::json params_json(const lra::Params& p);
int64_t peak_rss_bytes();  // the process's peak resident set (Linux)
// "cpu", "cuda" (usage error when unavailable) or "auto" (CUDA when available).
torch::Device pick_device(const std::string& want);
std::shared_ptr<spdlog::logger> make_logger();
// Creates the plugin's mixer for each block; a failing create becomes a
// plugin (or rules) error naming the plugin.
MixerFactory plugin_mixer_factory(const LoadedPlugin& mixer, const lra::Params& options);

}  // namespace lra::host
