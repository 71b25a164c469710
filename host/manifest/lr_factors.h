// manifest/lr_factors.h — the vocabulary of train.schedule: the factor names
// LRA's create_learning_rate_scheduler (lra_benchmarks/utils/train_utils.py)
// knows, and parsing a "*"-separated spec. The validator checks manifests
// with it; train/lr_schedule.h evaluates the rate (the formulas are there).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace lra::host
