// reevaluation/fine_tuning_replay.h — the proof that a self-pretrained run's
// fine-tuning started from its pretrained weights (docs/rules.md
// "Self-pretraining", rules/fine_tuning_replay.h). The verifier builds the
// run's classifier itself, with its mixers in the confined mixer process,
// loads the bundle's encoder.pt, and trains the fine-tuning's first updates
// again under the recorded configuration (its schedule, optimizer groups,
// data order, dropout stream and micro-batches); the weights it reaches are
// compared with the run's fine-tuning-start.pt, within a share of the
// distance the replayed updates moved (rules/fine_tuning_replay.h): small on
// the run's own device and precision, larger on another. A fine-tuning from other weights ends its first
// updates about as far from the replay as its start was from encoder.pt.
#pragma once

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "lra/task.h"
#include "manifest/manifest.h"
#include "model/backbone.h"
#include "reevaluation/reevaluate.h"
#include "results/run_record.h"

namespace lra::host {

struct FineTuningReplayInput {
  std::filesystem::path encoder;  // the bundle's pretraining/encoder.pt (hash checked by verify)
  std::filesystem::path start;    // the bundle's pretraining/fine-tuning-start.pt (hash checked by verify)
  int64_t updates = 0;            // how many updates it follows (rules/fine_tuning_replay.h)
  int64_t micro_batch = 0;        // the run's timing.micro_batch (the same passes, so the same sums)
  bool bf16 = false;              // the run's precision, where this device can repeat it
  bool same_device = false;       // the verifier's device and precision are the run's (the tolerance)
};

// Appends a fact or a reason to `r`; returns reevaluation.json's
// "fine_tuning_start". `factory` makes mixers in the mixer process; the
// dataset is the verifier's own (its training split is what is read).
nlohmann::json replay_fine_tuning_start(const FineTuningReplayInput& in, const RunRecord& run, const Manifest& config,
                                        const lra::Dataset& data, const MixerFactory& factory, int abi_minor,
                                        const torch::Device& device, RunReevaluation& r);

}  // namespace lra::host
