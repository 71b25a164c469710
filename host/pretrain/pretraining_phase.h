// pretrain/pretraining_phase.h — the first phase of a self-pretraining run
// (docs/rules.md "Self-pretraining"): the classifier's encoder, with the
// host's pretraining head (pretrain/pretraining_model.h), trains on the
// training split's inputs alone under the manifest's [pretrain] settings, on
// the host's one training loop (checkpoints, resume, progress, data
// parallel). It writes, under <run>/pretraining/:
//   checkpoints/step-N/  while it runs (resumable, like the fine-tuning's);
//   encoder.pt           the classifier after the phase: its encoder
//                        pretrained, its head as the trial seed drew it —
//                        exactly the weights the fine-tuning starts from;
//   pretraining.json     the phase's record, written last (the phase is done
//                        when it is there and encoder.pt has its hash).
#pragma once

#include <cstdint>
#include <functional>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "lra/task.h"
#include "manifest/manifest.h"
#include "model/backbone.h"
#include "pretrain/objectives.h"
#include "train/training_loop.h"

namespace lra::host {

// Where the phase's files go inside a run directory.
inline constexpr const char* kPretrainingDir = "pretraining";
inline constexpr const char* kPretrainedWeights = "encoder.pt";
inline constexpr const char* kPretrainingRecord = "pretraining.json";

struct PretrainingOptions {
  Manifest manifest;             // its [pretrain] section and train.seed
  PretrainObjective objective = PretrainObjective::masked_tokens;
  torch::Device device = torch::kCPU;
  int64_t micro_batch = 0;       // as the fine-tuning's (train/trainer.h)
  bool bf16 = false;
  bool live_progress = false;
  Distributed* dist = nullptr;
  std::filesystem::path run_dir;  // the run's directory (every rank reads it to resume)
  bool writes = true;             // rank 0: checkpoints, encoder.pt and the record
  nlohmann::json identity;        // the run's identity (checkpoints carry it with the phase's name)
  bool resume = false;            // continue from <run>/pretraining/ when it holds a checkpoint or the finished phase
  double stop_after_seconds = 0;  // > 0: stop with a checkpoint (the run exits 9, --resume continues)
  // AdamW's parameter groups over the model the phase trains (the mixers'
  // hints, train/optimizer_groups.h) for its settings; null: one group.
  std::function<std::vector<OptimizerGroup>(const torch::nn::Module&, const TrainConfig&)> make_groups;
};

struct PretrainingOutcome {
  bool stopped = false;       // --stop-after: checkpointed, not finished
  int64_t steps = 0;          // updates done
  nlohmann::json record;      // result.json's "pretraining" member (once finished)
  std::vector<std::pair<int64_t, double>> report_speeds;  // this process's, for the curves
};

// Runs (or, resuming, continues or finds finished) the phase; on return with
// !stopped, `classifier` holds the weights of encoder.pt. Errors are
// lra::Error with the documented kinds.
PretrainingOutcome run_pretraining(Classifier& classifier, const lra::Dataset& data, const PretrainingOptions& o,
                                   spdlog::logger& log);

// The phase's files: whether the run directory holds any (a run started
// without --resume refuses such a directory).
bool has_pretraining_files(const std::filesystem::path& run_dir);

}  // namespace lra::host
