// plugins/gradient_check.h — `lrahost inspect --check --gradients`: a mixer's
// backward checked in float64 against central finite differences (on a random
// sample of input and parameter elements), and its float32 gradients against
// its float64 ones, each with the worst element named. What the plugin guide
// recommends before a long run, without writing a harness.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lra/mixer.h"
#include "plugins/mixer_factory.h"

namespace lra::host {

struct GradientCheck {
  std::string name;           // "finite differences (float64)" or "float32 against float64"
  bool passed = false;
  double worst = 0;           // the largest error found, as `tolerance` measures it
  double tolerance = 0;
  std::string worst_element;  // e.g. "x[1, 3, 5]" or "proj.q.weight[2, 7]"
  int64_t elements = 0;       // elements compared
};

// One mixer of `spec` (evaluation mode, so no dropout), input [2, spec.max_len,
// spec.d_model] with the second example's second half padded, seeded by `seed`.
// Plugin exceptions propagate as lra::Error(plugin).
std::vector<GradientCheck> check_gradients(const MixerMaker& make, const lra::MixerSpec& spec, uint64_t seed);

}  // namespace lra::host
