#include "rules/pretraining_objective.h"

namespace lra::host {

std::string objective_name(PretrainObjective o) {
  return o == PretrainObjective::next_token ? "next_token" : "masked_tokens";
}

PretrainObjective objective_for(SummaryPosition summary) {
  return summary == SummaryPosition::after_last ? PretrainObjective::next_token : PretrainObjective::masked_tokens;
}

std::string objective_name_for_summary(const std::string& model_summary) {
  const auto p = summary_position_from_name(model_summary);
  return objective_name(objective_for(p ? *p : SummaryPosition::first));
}

}  // namespace lra::host
