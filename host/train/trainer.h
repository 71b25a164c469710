// train/trainer.h — the LRA training protocol (docs/rules.md): the classifier
// trained by the training loop (train/training_loop.h) on shuffled batches,
// evaluation over the whole validation split every eval_every steps, test on
// the final parameters.
#pragma once

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <memory>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>
#include <torch/optim/adamw.h>

#include "lra/task.h"
#include "manifest/manifest.h"
#include "distributed/distributed.h"
#include "model/backbone.h"
#include "train/training_loop.h"

namespace lra::host {

// Examples per evaluation forward pass: eval_batch_size, capped by the
// micro-batch when one splits the batch (0 < micro_batch < batch_size).
// `run`, `bench --task` and re-evaluation (`verify --reevaluate`, from the result's
// timing.micro_batch, which is batch_size when the batch was not split) all
// use this, so a re-evaluation runs the same passes, on the same kernels, as
// the run it checks.
inline int64_t evaluation_pass(int64_t micro_batch, int64_t batch_size, int64_t eval_batch_size) {
  return micro_batch > 0 && micro_batch < batch_size ? std::min(micro_batch, eval_batch_size) : eval_batch_size;
}

// The pass a finished run evaluated in, from its result.json (config.train,
// timing.micro_batch), and whether it evaluated under bfloat16 autocast
// (timing.precision): what re-evaluating it must repeat.
inline int64_t recorded_evaluation_pass(const nlohmann::json& result) {
  const auto& train = result.at("config").at("train");
  return evaluation_pass(result.at("timing").value("micro_batch", int64_t{0}), train.value("batch_size", int64_t{0}),
                         train.value("eval_batch_size", int64_t{32}));
}
inline bool recorded_bf16(const nlohmann::json& result) {
  return result.at("timing").value("precision", std::string()) == "bfloat16 autocast";
}

// A sequence task's score in one cell of its grid (lra::SequenceTargets::cell_names).
struct CellScore {
  std::string name;
  int64_t examples = 0, positions = 0, correct_positions = 0, correct_examples = 0;
  double accuracy() const { return positions ? static_cast<double>(correct_positions) / positions : 0.0; }
  double example_accuracy() const { return examples ? static_cast<double>(correct_examples) / examples : 0.0; }
};

// Loss and accuracy per example (classification) or per scored position
// (sequence tasks: `positions` of them; `example_accuracy` the share of
// examples with every scored position right; per cell where the task names cells).
struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t count = 0;  // examples
  int64_t positions = 0;
  double example_accuracy = 0;
  std::vector<CellScore> cells;
};

// The training loop's result (losses, history, timing, resume point) and
// what the classifier adds.
struct TrainResult : TrainingLoopResult {
  EvalResult test;
  double best_val_accuracy = 0;
  int64_t best_val_step = -1;
  double eval_seconds = 0;  // validation, checkpoints and the final test
};

// Exact mean over every example of the split (no dropped remainder); for a
// sequence task (`targets`, with its cell names) over every scored position.
EvalResult evaluate(Classifier& model, const lra::Split& split, int64_t max_len, int64_t batch_size,
                    const torch::Device& device, bool bf16 = false, const lra::SplitTargets* targets = nullptr,
                    const std::vector<std::string>& cell_names = {});

// evaluate() on split `split` of `data`, with its targets when it is a sequence task.
EvalResult evaluate_split(Classifier& model, const lra::Dataset& data, const lra::Split& split, int64_t max_len,
                          int64_t batch_size, const torch::Device& device, bool bf16 = false);

// The predicted class of every example of `split`, in order, batched as
// evaluate() batches (the same logits, so the same accuracy); labels unused.
std::vector<int32_t> predict(Classifier& model, const lra::Split& split, int64_t max_len, int64_t batch_size,
                             const torch::Device& device, bool bf16 = false);

// A sequence task's model on `split`, scored against `targets`: per example,
// in order, its scored positions and the ones predicted right — batched as
// evaluate() batches, so they sum to its accuracy. What a verifier compares
// with its own targets, which never reach a mixer.
struct PositionCounts {
  std::vector<int64_t> correct, positions;
};
PositionCounts count_right_positions(Classifier& model, const lra::Split& split, const lra::SplitTargets& targets,
                                     int64_t max_len, int64_t batch_size, const torch::Device& device,
                                     bool bf16 = false);

// The loop's options (schedule, device, progress, checkpoints and resume,
// data parallel: train/training_loop.h) and what the classifier adds.
struct TrainerOptions : TrainingLoopOptions {
  int64_t max_len = 0;
  // Examples per forward/backward pass (0 = the whole batch). Gradients are
  // accumulated over the batch, so the update equals the whole-batch update;
  // only peak memory changes (ListOps at 2K tokens needs ~50 GB at batch 32).
  // Evaluation runs in passes of at most this many examples too, when it
  // splits the batch (evaluation_pass; its sums
  // are per example, so only memory changes: Path-X's evaluation batch of 64
  // needs ~140 GB per attention matrix in float32).
  int64_t micro_batch = 0;
  int64_t eval_pass() const { return evaluation_pass(micro_batch, train.batch_size, train.eval_batch_size); }
  bool bf16 = false;  // bfloat16 autocast for forward and loss (CUDA only; ignored on CPU)
  // Called after every validation (rank 0) with the update step and the result.
  std::function<void(int64_t step, const EvalResult& val)> on_validation;
};

// Splits CPU threads between LibTorch and the BLAS. With OpenBLAS (Debian's
// LibTorch) the matrix products run on OpenBLAS's own threads and LibTorch's
// OpenMP pool only spin-waits against them, so LibTorch gets one thread.
void configure_cpu_threads(int threads);

TrainResult train_and_evaluate(Classifier& model, const lra::Dataset& data, const TrainerOptions& opts,
                               spdlog::logger& log);

}  // namespace lra::host
