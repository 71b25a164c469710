// train/optimizer_groups.h — AdamW parameter groups from the mixers' optimizer
// hints (lra::ParamHint, SDK 1.2): which parameters take no weight decay and
// which learn at a lower rate, as state-space layers' authors train them.
// Hints may only lower weight decay (to 0) and the learning rate; anything
// else is the plugin's fault (exit 3). The groups are recorded in result.json
// (`optimizer.groups`) and verify checks the record (results/verify.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>
#include <torch/nn/module.h>

#include "lra/mixer.h"
#include "manifest/manifest.h"

namespace lra::host {

struct OptimizerGroup {
  std::vector<std::string> names;  // full parameter names in the model, in its order
  int64_t elements = 0;            // numbers in those parameters
  bool no_weight_decay = false;
  double lr_factor = 1.0;          // the schedule's learning rate times this, in (0, 1]
  std::string rule;                // in words, for the log and the result
};

// The hints of each mixer (asked only when the plugin was built for SDK 1.2
// or later: `plugin_abi_minor`), checked against its own parameters, turned
// into groups over `model`'s parameters. The first group holds every
// parameter without a hint (the manifest's weight decay, the schedule's rate).
// `plugin` names the plugin in errors. Peak of the schedule: from `train`.
std::vector<OptimizerGroup> optimizer_groups(const torch::nn::Module& model,
                                             const std::vector<std::shared_ptr<lra::Mixer>>& mixers,
                                             int plugin_abi_minor, const std::string& plugin,
                                             const TrainConfig& train);

// One log line per group of hinted parameters ("optimizer hints: ..."), for
// `run` and `forget` alike.
void log_hinted_groups(const std::vector<OptimizerGroup>& groups, spdlog::logger& log);

// result.json's `optimizer` object: {"groups": [...]} with the manifest's weight decay.
nlohmann::json optimizer_record(const std::vector<OptimizerGroup>& groups, double weight_decay);

}  // namespace lra::host
