// forgetting/curve.h — the data of one forgetting curve (docs/forgetting.md,
// "What is measured" and "The memory lengths"), shared by the measurement, the statistics,
// the JSON report and the plots.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lra::host::forgetting {

// One tested length L: R copy samples and R LM samples, each scored on the
// last ceil(L/2) tokens of the second S.
struct CurvePoint {
  int64_t length = 0;
  std::vector<double> copy_accs, lm_accs;  // one accuracy per repetition, same order
  double copy_mean = 0, copy_std = 0;      // population standard deviation (ddof = 0)
  double lm_mean = 0, lm_std = 0;
  double p_value = 1.0;                    // paired t-test of (lm_accs, copy_accs); NaN -> 1.0
  std::string error;                       // non-empty: this length failed (e.g. out of memory); no accuracies
  bool ok() const { return error.empty(); }
};

// A memory length (docs/forgetting.md, "The memory lengths"; forgetting/memory_length.h). censored = the
// condition still held at the longest tested length (the paper's "> L").
struct MemoryLength {
  int64_t value = 0;
  bool censored = false;
};

struct Curve {
  std::string label;         // model name shown in plots (plugin name or TorchScript file stem)
  int64_t train_length = 0;  // 0 = unknown (no reference lines)
  std::vector<CurvePoint> points;  // ascending length
  MemoryLength fine, coarse;                 // headline: Table 3's rule (largest tested length that holds)
  MemoryLength fine_prefix, coarse_prefix;   // secondary: it holds at every tested length up to it
  bool complete = true;      // false when any point has an error
};

}  // namespace lra::host::forgetting
