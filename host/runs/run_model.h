// runs/run_model.h — the model a run trains: the classifier (or a sequence
// task's per-position model) with the plugin's mixers, checked before any
// training against the parameter budget the reference Transformer sets and
// against the promises the plugin's descriptor makes; where its head reads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "lra/task.h"
#include "model/backbone.h"
#include "rules/rules.h"
#include "rules/summary_position.h"
#include "runs/run_plan.h"
#include "train/optimizer_groups.h"

namespace lra::host {

struct BuiltModel {
  Classifier model{nullptr};
  ParamBudget budget;
  int64_t total_params = 0;
  std::vector<OptimizerGroup> groups;  // AdamW's, from the mixers' hints
  SummaryPosition summary = SummaryPosition::first;
  // The same classifier built afresh (the seed, the plugin's mixers, the
  // summary): a self-pretrained run fine-tunes one, as a run resumed after
  // the first phase and the verifier's replay do.
  std::function<Classifier()> rebuild;
  std::function<std::vector<OptimizerGroup>(const Classifier&)> groups_of;
};

// The reference Transformer sets the budget; the plugin's model is checked
// against it and against its descriptor's promises before training (exit 3
// or 4 naming what failed).
BuiltModel build_model(const RunPlan& p, const lra::Dataset& data, const std::string& device, spdlog::logger& log);

}  // namespace lra::host
