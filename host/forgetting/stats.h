// forgetting/stats.h — the per-length statistics of the reference tool
// (docs/forgetting.md, "What is measured"): mean, population standard deviation and
// the paired t-test of the LM and copy accuracies.
#pragma once

#include <vector>

#include "forgetting/curve.h"

namespace lra::host::forgetting {

// Arithmetic mean; NaN for an empty list (as numpy).
double mean(const std::vector<double>& xs);

// Population standard deviation (ddof = 0, numpy's default); NaN for an empty list.
double population_std(const std::vector<double>& xs);

// Two-sided p-value of the paired t-test, as scipy.stats.ttest_rel(a, b):
// t = mean(d) / (sd(d) / sqrt(n)) with d = a - b, sd with ddof = 1, n - 1
// degrees of freedom. Where scipy gives NaN (n < 2, or every difference zero)
// this returns 1.0, as the reference tool does. Differences that are all equal
// but non-zero give |t| = inf and p = 0, as in scipy.
// Throws lra::Error(internal) when the lists differ in length.
double paired_t_test_p(const std::vector<double>& a, const std::vector<double>& b);

// Fills copy_mean/std, lm_mean/std and p_value (of (lm_accs, copy_accs)) from
// the accuracies of an ok point. Throws lra::Error(data) naming the length when
// a list is empty or the two lists differ in length.
void summarize(CurvePoint& point);

}  // namespace lra::host::forgetting
