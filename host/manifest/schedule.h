// manifest/schedule.h — LRA's learning-rate schedule
// (lra_benchmarks/utils/train_utils.py, create_learning_rate_scheduler).
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
//   wsd                     warmup-stable-decay (MiniCPM; forgetting-curve reference §12) with
//                           T = train.steps, D = train.decay_steps, S = T - W - D:
//                             s < W:        1/W + (1 - 1/W) * s / W
//                             s < W + S:    1
//                             otherwise:    1 - (1 - 1/D) * (s - W - S) / D   (1/D at s = T)
// Factors may repeat (each occurrence multiplies again), as in the reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "manifest/manifest.h"

namespace lra::host {

enum class LrFactor {
  constant,
  linear_warmup,
  rsqrt_decay,
  rsqrt_normalized_decay,
  decay_every,
  cosine_decay,
  wsd,
};

// Reference defaults of decay_every (LRA never uses the factor).
inline constexpr double kDecayEveryFactor = 0.5;
inline constexpr int64_t kDecayEverySteps = 20000;

// The known factor names, in the order above.
const std::vector<std::string>& lr_factor_names();

// Splits a "*"-separated spec (whitespace around names ignored). Returns
// nullopt on an unknown or empty name and stores that name in *bad.
std::optional<std::vector<LrFactor>> parse_lr_factors(std::string_view spec,
                                                      std::string* bad = nullptr);

// Factors that divide by W and therefore need warmup > 0.
bool factor_needs_warmup(LrFactor f);

// A schedule parsed once from a TrainConfig.
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

// One-off evaluation (parses cfg.schedule on every call; hold an
// LrSchedule in a loop).
double learning_rate(const TrainConfig& cfg, int64_t s);

}  // namespace lra::host
