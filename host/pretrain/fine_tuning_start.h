// pretrain/fine_tuning_start.h — how a self-pretrained run's fine-tuning
// starts, written once for the run (runs/train_run.cpp) and for the
// verifier that replays that start (reevaluation/fine_tuning_replay.h):
// from encoder.pt, with the random stream restarted from the trial seed; the
// weights after the first updates are kept (rules/fine_tuning_replay.h).
#pragma once

#include <cstdint>

#include <torch/utils.h>

#include "rules/fine_tuning_replay.h"

namespace lra::host {

// The fine-tuning's random stream (dropout) starts from the trial seed, not
// from wherever the first phase left it: a run resumed after that phase, and
// the verifier's replay, continue exactly as an uninterrupted run.
inline void seed_fine_tuning(int64_t trial_seed) {
  torch::manual_seed(static_cast<uint64_t>(trial_seed) ^ 0x46494e4554554e45ULL);  // "FINETUNE"
}

}  // namespace lra::host
