// span/running_mean.h — a mean kept as a sum and a count, so that values
// measured batch by batch average exactly as if measured at once.
#pragma once

#include <cstdint>

namespace lra::host::span {

struct RunningMean {
  double sum = 0;
  int64_t n = 0;
  void add(double x) { sum += x, ++n; }
  double value() const { return n ? sum / static_cast<double>(n) : 0.0; }
};

}  // namespace lra::host::span
