// forgetting/lm_training.h — next-token training of the causal LM on a token
// stream (docs/forgetting.md, "The model and its training"): the objective
// (fixed-length windows in a seeded order, the held-out loss) on the host's
// one training loop (train/training_loop.h: AdamW, clipping, the manifest's
// schedule — WSD for the official manifest).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "manifest/manifest.h"
#include "model/causal_lm.h"
#include "plugins/conformance.h"
#include "train/training_loop.h"

namespace lra::host::forgetting {

// The loop's options (train, device, live_progress; one process, no
// checkpoints) and what the LM adds.
struct LmTrainOptions : TrainingLoopOptions {
  int64_t seq_len = 0;                 // training length (model.max_len)
  bool bf16 = false;                   // bfloat16 autocast (CUDA only)
  int64_t eval_windows = 256;          // held-out windows scored per evaluation
  // Live 'causal' checks (plugins/conformance.h): on the steps it draws, the
  // step's batch is also run in evaluation mode without gradients, perturbed
  // and as is, before the update; LibTorch's generators are rewound after,
  // so training is bit-identical with or without them. Null: none.
  LiveCausalCheck* spot_check = nullptr;
};

// Chance that a training step is spot-checked: two forwards without
// gradients per check, ~5% of training time on the smoke preset, and a
// mixer that leaks for 100 steps escapes with probability (15/16)^100 < 0.2%.
inline constexpr double kTrainingSpotCheckProbability = 1.0 / 16;

// The loop's result (final_train_loss: nats/token over the last report
// window; other_seconds: the held-out evaluations) and what the LM adds.
struct LmTrainResult : TrainingLoopResult {
  double test_loss = 0;                // nats/token on the held-out windows, final parameters
  int64_t test_tokens = 0;
  double tokens_per_second = 0;
};

// The training windows: (seq_len + 1)-token slices of the stream at stride
// seq_len (input = first seq_len tokens, target = last seq_len), in one seeded
// permutation per epoch. Throws a data error when the stream is too short.
LmTrainResult train_causal_lm(CausalLM& model, const std::vector<int32_t>& train, const std::vector<int32_t>& test,
                              const LmTrainOptions& o, spdlog::logger& log);

// Mean next-token loss (nats) over up to `max_windows` evenly spaced
// non-overlapping seq_len-token windows of `tokens`; returns {loss, tokens}.
std::pair<double, int64_t> held_out_loss(CausalLM& model, const std::vector<int32_t>& tokens, int64_t seq_len,
                                         int64_t batch, int64_t max_windows, const torch::Device& device, bool bf16);

}  // namespace lra::host::forgetting
