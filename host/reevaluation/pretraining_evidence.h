// reevaluation/pretraining_evidence.h — a self-pretrained run's chain as the
// verifier checks it from its own data (docs/rules.md "Self-pretraining"):
// the pretraining's recorded inputs fingerprints are those of these data's
// training split and of neither held-out split; the bundle carries
// pretraining/encoder.pt and pretraining/fine-tuning-start.pt (verify, step 1,
// compared their hashes with the record); and what the replay of the
// fine-tuning's first updates reads (reevaluation/fine_tuning_replay.h).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "lra/task.h"
#include "manifest/manifest.h"
#include "reevaluation/fine_tuning_replay.h"
#include "reevaluation/reevaluate.h"

namespace lra::host {

// `phase`: the result's "pretraining" member. Appends reasons and facts to
// `r`; returns the replay's input, or nullopt (with a reason) when the
// result or the bundle lacks what it needs.
std::optional<FineTuningReplayInput> check_pretraining_evidence(const nlohmann::json& phase,
                                                                const nlohmann::json& result, const Manifest& config,
                                                                const lra::Dataset& data, const ReevaluateOptions& o,
                                                                RunReevaluation& r);

}  // namespace lra::host
