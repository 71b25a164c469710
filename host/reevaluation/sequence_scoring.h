// reevaluation/sequence_scoring.h — re-evaluating a sequence task's result
// (SDK 1.4, metrics.scored = "position"): its examples and targets in the
// secret order, and the tests on per-position accuracy. Positions of one
// example are not independent (a model that lost the pairs misses every
// query of that example), so the tests treat each example as a cluster: the
// accuracy is positions right over positions, its variance the ratio
// estimator's over examples. A per-position binomial test would flag honest
// work by chance far more often than its p-value says.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lra/task.h"
#include "reevaluation/private_set.h"
#include "reevaluation/reevaluate.h"
#include "train/trainer.h"

namespace lra::host {

// `targets` in the order `order` puts examples (permuted(split, order)'s order).
lra::SplitTargets permuted_targets(const lra::SplitTargets& targets, const lra::Split& split,
                                   const std::vector<size_t>& order);
// Appends `from`'s targets (and cells) to `to`.
void append_targets(lra::SplitTargets& to, const lra::SplitTargets& from);

// The counts of examples [first, last) of the unshuffled split, from counts in
// the shuffled order (`order[j]` is shuffled example j's index).
PositionCounts unshuffled_counts(const PositionCounts& shuffled, const std::vector<size_t>& order, size_t first,
                                 size_t last);

int64_t total_correct(const PositionCounts& c);
int64_t total_positions(const PositionCounts& c);

// One-sided: is a's accuracy above b's by more than chance, examples as clusters.
ProportionTest clustered_gap_test(const PositionCounts& a, const PositionCounts& b);
// One-sided: is a's accuracy above `rate` by more than chance, examples as clusters.
ProportionTest clustered_above_rate_test(const PositionCounts& a, double rate);

// Steps 8-10 of re-evaluating a sequence task's run (reevaluate_run.cpp
// does them for a classifier): the public test split's accuracy per position
// against metrics.test_accuracy (identical on the same device, precision and
// build; within the tolerance otherwise), the private set against the public
// split, and freshly initialised weights against the majority target rate.
struct SequencePasses {
  const PositionCounts& trained;
  const PositionCounts& fresh;
  const std::vector<size_t>& order;  // shuffled example j is example order[j] of public + private
  size_t public_examples = 0;        // the first ones; the rest are private
  double majority_rate = 0;          // of the scored targets, public and private
};
struct SequenceJudgement {
  double tolerance = 0, significance = 0;
  bool same_device = false, same_setting = false;
  std::string device, precision;  // the verifier's
};
void judge_sequence_passes(const SequencePasses& p, const SequenceJudgement& j, const nlohmann::json& result,
                           RunReevaluation& r);

}  // namespace lra::host
