// train/trainer.h — the LRA training protocol (docs/rules.md): the classifier
// trained by the training loop (train/training_loop.h) on shuffled batches,
// evaluation over the whole validation split every eval_every steps, test on
// the final parameters.
#pragma once

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

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t count = 0;
};

struct TrainResult {
  EvalResult test;
  double best_val_accuracy = 0;
  int64_t best_val_step = -1;
  double final_train_loss = 0, final_train_accuracy = 0;
  nlohmann::json history = nlohmann::json::array();
  double train_seconds = 0, eval_seconds = 0, steps_per_second = 0;
  int64_t steps = 0;
  std::optional<std::filesystem::path> resumed_from;  // the checkpoint actually continued from
};

// Exact mean over every example of the split (no dropped remainder).
EvalResult evaluate(Classifier& model, const lra::Split& split, int64_t max_len, int64_t batch_size,
                    const torch::Device& device, bool bf16 = false);

// The predicted class of every example of `split`, in order, batched as
// evaluate() batches (the same logits, so the same accuracy); labels unused.
std::vector<int32_t> predict(Classifier& model, const lra::Split& split, int64_t max_len, int64_t batch_size,
                             const torch::Device& device, bool bf16 = false);

struct TrainerOptions {
  TrainConfig train;
  int64_t max_len = 0;
  torch::Device device = torch::kCPU;
  bool live_progress = false;  // rewrite one status line on a terminal
  // Examples per forward/backward pass (0 = the whole batch). Gradients are
  // accumulated over the batch, so the update equals the whole-batch update;
  // only peak memory changes (ListOps at 2K tokens needs ~50 GB at batch 32).
  int64_t micro_batch = 0;
  bool bf16 = false;  // bfloat16 autocast for forward and loss (CUDA only; ignored on CPU)
  // Checkpoints every train.checkpoint_every updates into <run_dir>/checkpoints
  // (empty run_dir: none), stamped with `identity`. resume_from: continue from
  // that checkpoint (train/checkpoint.h).
  std::filesystem::path run_dir;
  nlohmann::json identity;
  std::optional<std::filesystem::path> resume_from;
  // Older checkpoints to fall back on, newest first, when resume_from cannot
  // be loaded (a corrupt or truncated file); each one skipped is logged with why.
  std::vector<std::filesystem::path> resume_fallbacks;
  // Data parallel (null: one process). Each rank trains on its slice of every
  // global batch; only rank 0 evaluates.
  Distributed* dist = nullptr;
};

// Splits CPU threads between LibTorch and the BLAS. With OpenBLAS (Debian's
// LibTorch) the matrix products run on OpenBLAS's own threads and LibTorch's
// OpenMP pool only spin-waits against them, so LibTorch gets one thread.
void configure_cpu_threads(int threads);

TrainResult train_and_evaluate(Classifier& model, const lra::Dataset& data, const TrainerOptions& opts,
                               spdlog::logger& log);

}  // namespace lra::host
