// train/training_loop.h — the one training loop behind every model the host
// trains (the LRA classifier in train/trainer.h, the forgetting curve's causal
// LM in forgetting/lm_training.h). The loop owns what both share: AdamW with
// the manifest's schedule, global-norm clipping, the data-parallel gradient
// all-reduce, report windows summed on the device, evaluation cadence,
// logging and progress, checkpoints and resuming. What is trained — the
// batches, the loss, the evaluation — comes from a TrainingObjective.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>
#include <spdlog/logger.h>
#include <torch/nn/module.h>
#include <torch/optim/adamw.h>

#include "distributed/distributed.h"
#include "manifest/manifest.h"
#include "train/optimizer_groups.h"
#include "train/step_graph.h"

namespace lra::host {

// Sums over the updates since the last report, on the device: the loop reads
// them only at report time, so the step loop never waits for the device.
struct TrainWindow {
  at::Tensor loss;     // summed loss (double)
  at::Tensor correct;  // summed correct predictions (double); stays 0 without accuracy
  double count = 0;    // what the loss is averaged over (examples, or updates)
};

// What is trained. The loop calls start() once, then per update
// accumulate_gradients(), and evaluate() at every evaluation point.
class TrainingObjective {
 public:
  virtual ~TrainingObjective() = default;
  // Before the first update; `updates_done` > 0 when the run resumed (the
  // data order is a function of the seed and the batches drawn).
  virtual void start(int64_t updates_done) = 0;
  // Forward and backward (through backward() below) for this rank's part of
  // one update's batch; adds the loss, correct predictions and count to `window`.
  virtual void accumulate_gradients(TrainWindow& window) = 0;
  // Whether the training accuracy means anything (shown and recorded if so).
  virtual bool has_accuracy() const = 0;
  // Evaluates the current parameters after update `step` (rank 0 only);
  // adds its fields to the history entry and returns the log's words for it.
  virtual std::string evaluate(int64_t step, nlohmann::json& history_entry) = 0;
  // CUDA graphs (train/step_graph.h): an objective whose updates all have the
  // same shapes can stage each update's batch into tensors that stay the same
  // (stage_next_update, outside the graph) and run its passes over them
  // (accumulate_staged: device work only — what a capture records — adding
  // loss and correct predictions to the window). staged_count() is what each
  // update adds to window.count. The same arithmetic as accumulate_gradients.
  virtual bool fixed_shapes() const { return false; }
  virtual void stage_next_update() {}
  virtual void accumulate_staged(TrainWindow& /*window*/) {}
  virtual double staged_count() const { return 0; }
  // State a checkpoint carries beyond the loop's own (merged into its progress object).
  virtual nlohmann::json progress() const { return nlohmann::json::object(); }
  virtual void restore(const nlohmann::json& /*progress*/) {}
};

// loss.backward() as a plugin call (mixers' backward runs there: faults are
// reported as the plugin's, common/plugin_calls.h).
void backward(const at::Tensor& loss);

// AdamW with the manifest's betas, eps and decoupled weight decay on every
// parameter; the learning rate is set per update from the schedule.
torch::optim::AdamWOptions adamw_options(const TrainConfig& t);

struct TrainingLoopOptions {
  TrainConfig train;
  torch::Device device = torch::kCPU;
  bool live_progress = false;  // rewrite one status line on a terminal
  // Data parallel (null: one process): gradients are summed over ranks after
  // every update; only rank 0 evaluates.
  Distributed* dist = nullptr;
  // Checkpoints every train.checkpoint_every updates into <run_dir>/checkpoints
  // (empty run_dir: none), stamped with `identity`. resume_from: continue from
  // that checkpoint (train/checkpoint.h), or from the first of
  // resume_fallbacks (newest first) that loads; each one skipped is logged.
  std::filesystem::path run_dir;
  nlohmann::json identity;
  std::optional<std::filesystem::path> resume_from;
  std::vector<std::filesystem::path> resume_fallbacks;
  // > 0 (with a run_dir): after this many seconds of the loop, stop
  // at the next report step with a checkpoint (every rank agrees on the step),
  // so a time-limited job (a Slurm slot, a lent GPU) continues with --resume.
  double stop_after_seconds = 0;
  // AdamW's parameter groups (train/optimizer_groups.h); empty: one group of
  // every parameter with the manifest's weight decay and the schedule's rate.
  std::vector<OptimizerGroup> groups;
  // Called after every update with the number of updates done (before its
  // report, evaluation and checkpoint): a self-pretrained run keeps its
  // weights after the first updates there (pretrain/fine_tuning_start.h).
  std::function<void(int64_t updates_done)> after_update;
  // Whether updates are captured in a CUDA graph (plan_step_graph; the
  // objective must then have fixed_shapes()).
  GraphPlan graphs;
  // > 0: return after this many updates, before any report, evaluation or
  // checkpoint of that update, as `stopped` (the verifier's replay of a
  // fine-tuning's first updates, reevaluation/fine_tuning_replay.h).
  int64_t stop_at_update = 0;
};

struct TrainingLoopResult {
  double final_train_loss = 0, final_train_accuracy = 0;  // over the last report window
  nlohmann::json history = nlohmann::json::array();        // one entry per report
  // Training speed at each report step of this process ({step, steps/s}):
  // kept apart from `history`, which is deterministic and compared across runs.
  std::vector<std::pair<int64_t, double>> report_speeds;
  int64_t first_step = 0, steps = 0;                       // updates done before and after this process
  double train_seconds = 0;  // wall time of the updates, evaluations and checkpoints excluded
  double other_seconds = 0;  // evaluations and checkpoints
  double steps_per_second = 0;
  std::optional<std::filesystem::path> resumed_from;  // the checkpoint actually continued from
  bool stopped = false;  // stop_after_seconds reached: `steps` updates done, checkpointed, not finished
  // How the updates ran on CUDA: GraphPlan::words, or why a planned capture
  // was given up ("off: the capture failed at update 4: ...").
  std::string cuda_graphs;
};

// Trains `model`'s parameters on the objective for train.steps updates.
// Throws Error(internal) when the loss stops being finite.
TrainingLoopResult run_training_loop(torch::nn::Module& model, TrainingObjective& objective,
                                     const TrainingLoopOptions& o, spdlog::logger& log);

}  // namespace lra::host
