// One run's model as the verifier evaluates it (reevaluation/reevaluate.h,
// step 7): built by the verifier itself from the recorded configuration and
// seed, with every block's mixer in the confined mixer process
// (isolation/mixer_process.h). Everything the verdict is made of is
// computed here, on the trusted side: the summary position (the host's probe
// through the remote mixers), the optimizer groups (the plugin's hints, the
// host's grouping), the fresh initialisation (the backbone's from the seed,
// the mixers' from the process that never sees model.pt), the count of
// trained values in model.pt against it, the predictions with the
// submitted and with the fresh weights, and for a self-pretrained run the
// replay of its fine-tuning's first updates.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/task_data.h"
#include "isolation/mixer_process.h"
#include "reevaluation/fine_tuning_replay.h"
#include "reevaluation/reevaluate.h"
#include "rules/rules.h"
#include "results/run_record.h"
#include "train/trainer.h"

namespace lra::host {

struct IsolatedEvaluationInput {
  const RunRecord& run;
  const Manifest& config;             // the recorded configuration
  lra::TaskInfo info;
  const lra::Split& inputs;           // public and private examples, in the secret order
  std::map<std::string, std::vector<int64_t>> host_buffers;  // the backbone's fixed buffers: name -> shape
  ParamBudget budget;
  bool trained_first = true;          // the secret order of the two passes
  // A self-pretrained run: the fine-tuning's first updates, trained again
  // from encoder.pt on `data`'s training split (reevaluation/fine_tuning_replay.h).
  const lra::Dataset* data = nullptr;
  std::optional<FineTuningReplayInput> replay;
  // A sequence task: `inputs`' targets, in the same order; the verifier scores
  // each pass against them (they never reach the mixer process).
  const lra::SplitTargets* targets = nullptr;
};

struct IsolatedEvaluation {
  std::optional<std::vector<int32_t>> trained, fresh;  // predictions; nullopt when a pass failed
  std::optional<PositionCounts> trained_positions, fresh_positions;  // a sequence task's, instead
  nlohmann::json parameters, isolation;                // reevaluation.json's "parameters" and "isolation"
  nlohmann::json fine_tuning_start;                    // ... and "fine_tuning_start" (self-pretrained runs)
  nlohmann::json state_size;                           // ... and "state_size" (sequence tasks): the verifier's own
};

// `process`: started (not yet opened) with the run's plugin; its output is
// the caller's to keep (MixerProcess::log_tail). Appends reasons and facts to
// `r` as it goes; throws only lra::Error(storage/memory).
IsolatedEvaluation evaluate_isolated(const IsolatedEvaluationInput& in, MixerProcess& process, const ReevaluateOptions& o,
                                     RunReevaluation& r);

}  // namespace lra::host
