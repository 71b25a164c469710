#include "forgetting/memory_length.h"

#include <algorithm>
#include <string>

#include "forgetting/stats.h"
#include "lra/status.h"

namespace lra::host::forgetting {
namespace {

template <class Condition>
MemoryLength scan(const std::vector<CurvePoint>& points, Condition holds) {
  MemoryLength result;
  for (const CurvePoint& p : points) {
    if (!p.ok() || !holds(p)) return result;
    result.value = p.length;
  }
  result.censored = !points.empty();
  return result;
}

}  // namespace

MemoryLength fine_length(const std::vector<CurvePoint>& points) {
  return scan(points, [](const CurvePoint& p) { return p.copy_mean > 0.99; });
}

MemoryLength coarse_length(const std::vector<CurvePoint>& points) {
  return scan(points, [](const CurvePoint& p) { return p.copy_mean - p.lm_mean > 0.01; });
}

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
    if (p.ok()) summarize(p);
  }
  curve.complete = std::all_of(curve.points.begin(), curve.points.end(),
                               [](const CurvePoint& p) { return p.ok(); });
  curve.fine = fine_length(curve.points);
  curve.coarse = coarse_length(curve.points);
}

}  // namespace lra::host::forgetting
