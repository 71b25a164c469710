// train/lr_schedule.h — LRA's learning-rate schedule
// (lra_benchmarks/utils/train_utils.py, create_learning_rate_scheduler),
// parsed once from the manifest and evaluated per update by the training
// loop. Torch-free, so it is tested without LibTorch.
//
// The rate is the product of the factors named in train.schedule
// ("constant*linear_warmup*rsqrt_decay"), evaluated at s = the optimizer's
// update counter before the update (0 for the first update), with
// base = train.lr, W = train.warmup, C = train.steps_per_cycle:
//   constant                base
//   linear_warmup           min(1, s / W)
//   rsqrt_decay             1 / sqrt(max(s, W))
//   rsqrt_normalized_decay  sqrt(W) / sqrt(max(s, W))
//   decay_every             0.5 ^ floor(s / 20000)
//   cosine_decay            max(0, 0.5 * (1 + cos(pi * (p mod 1)))), p = max(0, (s - W) / C)
//   wsd                     warmup-stable-decay (MiniCPM; docs/forgetting.md) with
//                           T = train.steps, D = train.decay_steps, S = T - W - D:
//                             s < W:        1/W + (1 - 1/W) * s / W
//                             s < W + S:    1
//                             otherwise:    1 - (1 - 1/D) * (s - W - S) / D   (1/D at s = T)
// Factors may repeat (each occurrence multiplies again), as in the reference.
#pragma once

#include <cstdint>
#include <vector>

#include "manifest/lr_factors.h"
#include "manifest/manifest.h"

namespace lra::host {

class LrSchedule {
 public:
  // Throws lra::Error(rules) on an unknown factor (normally caught earlier
  // by the manifest validator).
  explicit LrSchedule(const TrainConfig& cfg);
  // The learning rate for update counter s >= 0.
  double operator()(int64_t s) const;
  const std::vector<LrFactor>& factors() const { return factors_; }

 private:
  std::vector<LrFactor> factors_;
  double base_;
  double warmup_;
  double steps_per_cycle_;
  double steps_;
  double decay_steps_;
};

}  // namespace lra::host
