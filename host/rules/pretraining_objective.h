// rules/pretraining_objective.h — which objective a self-pretraining phase
// trains a mixer with (docs/rules.md "Self-pretraining"), one rule for the
// phase (pretrain/) and for verify: a mixer that does not read ahead (its
// summary is read after the last token, rules/summary_position.h) pretrains
// as a causal LM, any other with masked-token denoising.
#pragma once

#include <string>

#include "rules/summary_position.h"

namespace lra::host {

enum class PretrainObjective { masked_tokens, next_token };

// "masked_tokens" or "next_token": the words result.json records.
std::string objective_name(PretrainObjective o);

PretrainObjective objective_for(SummaryPosition summary);
// The same from result.json's model.summary ("after_last" = next_token).
std::string objective_name_for_summary(const std::string& model_summary);

}  // namespace lra::host
