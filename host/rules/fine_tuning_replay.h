// rules/fine_tuning_replay.h — the rule that ties a self-pretrained run's
// fine-tuning to its pretrained weights (docs/rules.md "Self-pretraining"):
// the run keeps its weights after the first updates of the fine-tuning, and
// `verify --reevaluate` trains those updates again from encoder.pt, with the
// mixers in the confined mixer process, and compares. Read by the run
// (pretrain/fine_tuning_start.h), verify (results/pretraining_check.cpp) and
// the replay (reevaluation/fine_tuning_replay.h). Torch-free.
#pragma once

#include <algorithm>
#include <cstdint>

namespace lra::host {

inline constexpr const char* kFineTuningStartWeights = "fine-tuning-start.pt";  // under pretraining/
// How many fine-tuning updates the verifier replays: enough that the
// optimizer's moments and the schedule have moved, few enough that the
// replay costs a handful of training steps.
inline constexpr int64_t kReplayedUpdates = 4;

// The updates after which a fine-tuning of `fine_tuning_steps` keeps its weights.
inline int64_t replayed_updates(int64_t fine_tuning_steps) { return std::min(kReplayedUpdates, fine_tuning_steps); }

// The replay's weights may differ from the run's by at most this share of
// the distance the replayed updates moved them from encoder.pt (L2 over
// every tensor). Adam's first steps are about lr x sign(gradient), so noise
// in the gradients moves the weights only where it flips a sign: on the
// run's own device and precision (another thread count or build at most)
// that is a few last bits; on another device or precision (a CUDA bfloat16
// run replayed in float32 on a CPU) gradients differ by up to a few
// percent. A fine-tuning from other weights ends its first updates about as
// far from the replay as its start was from encoder.pt, which the first
// updates do not close.
inline constexpr double kReplayToleranceSameDevice = 0.05;
inline constexpr double kReplayToleranceOtherDevice = 0.5;

}  // namespace lra::host
