#include "reevaluation/sequence_scoring.h"

#include <cmath>

namespace lra::host {
namespace {

// Accuracy (positions right / positions) and the ratio estimator's variance
// over examples: sum_i (c_i - p m_i)^2 / M^2 * n / (n - 1).
std::pair<double, double> clustered_accuracy(const PositionCounts& c) {
  const double M = static_cast<double>(total_positions(c));
  if (M <= 0) return {0, 0};
  const double p = static_cast<double>(total_correct(c)) / M;
  const double n = static_cast<double>(c.positions.size());
  double ss = 0;
  for (size_t i = 0; i < c.positions.size(); ++i) {
    const double d = static_cast<double>(c.correct[i]) - p * static_cast<double>(c.positions[i]);
    ss += d * d;
  }
  return {p, n > 1 ? ss / (M * M) * n / (n - 1) : 0.0};
}

double upper_tail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace

lra::SplitTargets permuted_targets(const lra::SplitTargets& targets, const lra::Split& split,
                                   const std::vector<size_t>& order) {
  lra::SplitTargets out;
  out.targets.reserve(targets.targets.size());
  for (size_t j : order) {
    out.targets.insert(out.targets.end(), targets.targets.begin() + split.offsets[j],
                       targets.targets.begin() + split.offsets[j + 1]);
    if (!targets.cells.empty()) out.cells.push_back(targets.cells[j]);
  }
  return out;
}

void append_targets(lra::SplitTargets& to, const lra::SplitTargets& from) {
  to.targets.insert(to.targets.end(), from.targets.begin(), from.targets.end());
  to.cells.insert(to.cells.end(), from.cells.begin(), from.cells.end());
}

PositionCounts unshuffled_counts(const PositionCounts& shuffled, const std::vector<size_t>& order, size_t first,
                                 size_t last) {
  PositionCounts out;
  out.correct.assign(last - first, 0);
  out.positions.assign(last - first, 0);
  for (size_t j = 0; j < order.size(); ++j)
    if (order[j] >= first && order[j] < last) {
      out.correct[order[j] - first] = shuffled.correct[j];
      out.positions[order[j] - first] = shuffled.positions[j];
    }
  return out;
}

int64_t total_correct(const PositionCounts& c) {
  int64_t s = 0;
  for (int64_t v : c.correct) s += v;
  return s;
}

int64_t total_positions(const PositionCounts& c) {
  int64_t s = 0;
  for (int64_t v : c.positions) s += v;
  return s;
}

ProportionTest clustered_gap_test(const PositionCounts& a, const PositionCounts& b) {
  const auto [pa, va] = clustered_accuracy(a);
  const auto [pb, vb] = clustered_accuracy(b);
  ProportionTest t;
  t.p1 = pa;
  t.p2 = pb;
  t.gap = pa - pb;
  const double se = std::sqrt(va + vb);
  t.z = se > 0 ? t.gap / se : 0;
  t.p_value = se > 0 ? upper_tail(t.z) : (t.gap > 0 ? 0.0 : 1.0);
  return t;
}

ProportionTest clustered_above_rate_test(const PositionCounts& a, double rate) {
  const auto [pa, va] = clustered_accuracy(a);
  ProportionTest t;
  t.p1 = pa;
  t.p2 = rate;
  t.gap = pa - rate;
  const double se = std::sqrt(va);
  t.z = se > 0 ? t.gap / se : 0;
  t.p_value = se > 0 ? upper_tail(t.z) : (t.gap > 0 ? 0.0 : 1.0);
  return t;
}

}  // namespace lra::host
