#include "forgetting/memory_length.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "forgetting/stats.h"
#include "lra/status.h"

namespace lra::host::forgetting {
namespace {

bool fine_holds(const CurvePoint& p) { return p.ok() && p.copy_mean > 0.99; }
bool coarse_holds(const CurvePoint& p) { return p.ok() && p.copy_mean - p.lm_mean > 0.01; }

template <class Condition>
MemoryLength largest(const std::vector<CurvePoint>& points, Condition holds) {
  MemoryLength result;
  for (const CurvePoint& p : points) {
    if (holds(p)) result.value = p.length;  // ascending: the last hit is the largest
  }
  result.censored = !points.empty() && holds(points.back());
  return result;
}

template <class Condition>
MemoryLength prefix(const std::vector<CurvePoint>& points, Condition holds) {
  MemoryLength result;
  for (const CurvePoint& p : points) {
    if (!holds(p)) return result;
    result.value = p.length;
  }
  result.censored = !points.empty();
  return result;
}

}  // namespace

MemoryLength fine_length(const std::vector<CurvePoint>& points) { return largest(points, fine_holds); }
MemoryLength coarse_length(const std::vector<CurvePoint>& points) { return largest(points, coarse_holds); }
MemoryLength fine_length_prefix(const std::vector<CurvePoint>& points) { return prefix(points, fine_holds); }
MemoryLength coarse_length_prefix(const std::vector<CurvePoint>& points) { return prefix(points, coarse_holds); }

void finalize(Curve& curve) {
  for (std::size_t i = 1; i < curve.points.size(); ++i) {
    if (curve.points[i].length <= curve.points[i - 1].length) {
      throw lra::Error(lra::ErrorKind::data,
                       "forgetting curve '" + curve.label + "': lengths not ascending (" +
                           std::to_string(curve.points[i].length) + " after " +
                           std::to_string(curve.points[i - 1].length) + ")");
    }
  }
  for (CurvePoint& p : curve.points) {
    // A reference-tool point without accuracy lists keeps its stored means.
    if (p.ok() && !(p.copy_accs.empty() && p.lm_accs.empty())) summarize(p);
  }
  curve.complete = std::all_of(curve.points.begin(), curve.points.end(),
                               [](const CurvePoint& p) { return p.ok(); });
  curve.fine = fine_length(curve.points);
  curve.coarse = coarse_length(curve.points);
  curve.fine_prefix = fine_length_prefix(curve.points);
  curve.coarse_prefix = coarse_length_prefix(curve.points);
}

std::string length_text(const MemoryLength& length) {
  return (length.censored ? "> " : "") + std::to_string(length.value);
}

std::string marked_length(const Curve& curve, const MemoryLength& length) {
  return length_text(length) + (describe_length(curve, length).rfind("not significant", 0) == 0 ? " n.s." : "");
}

std::string describe_length(const Curve& curve, const MemoryLength& length) {
  const std::string tokens = length_text(length) + " tokens";
  if (length.value == 0) return tokens;
  const auto at = std::find_if(curve.points.begin(), curve.points.end(),
                               [&](const CurvePoint& p) { return p.ok() && p.length == length.value; });
  if (at == curve.points.end() || at->copy_accs.size() < 2 || at->lm_accs.size() != at->copy_accs.size())
    return tokens + " (significance unknown: the curve gives no repetitions at that length)";
  char p[32];
  std::snprintf(p, sizeof p, "%.2g", at->p_value);
  if (at->p_value >= kSignificanceLevel)
    return "not significant: " + tokens + " at p = " + p + " >= 0.05 (paired t-test of copy against LM accuracy over " +
           std::to_string(at->copy_accs.size()) + " repetitions), so no memory length is claimed";
  return tokens + " (p = " + p + ")";
}

}  // namespace lra::host::forgetting
