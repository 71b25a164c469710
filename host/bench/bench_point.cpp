// bench/bench_point.cpp — see bench_point.h.
#include "bench/bench_point.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lra::host::bench {

Spread spread_of(const BenchPoint& p) {
  const auto& r = p.repetition_steps_per_s;
  if (r.size() < 2) return {};
  const auto [lo, hi] = std::minmax_element(r.begin(), r.end());
  Spread s{*lo, *hi, 0};
  if (p.steps_per_s > 0 && std::isfinite(p.steps_per_s)) s.fraction = (s.max - s.min) / p.steps_per_s;
  return s;
}

std::string speed_warning(const BenchPoint& p) {
  if (p.status != "ok") return "";
  std::string out;
  char b[160];
  const Spread s = spread_of(p);
  if (s.fraction > kSpreadWarning) {
    std::snprintf(b, sizeof b, "its %zu repetitions spread %.1f%% (%.3g-%.3g steps/s, more than %.0f%%)",
                  p.repetition_steps_per_s.size(), 100 * s.fraction, s.min, s.max, 100 * kSpreadWarning);
    out = b;
  }
  if (p.cores > 0 && p.load_average > static_cast<double>(p.cores)) {
    std::snprintf(b, sizeof b, "the machine's load average was %.1f on %lld cores", p.load_average,
                  static_cast<long long>(p.cores));
    out += (out.empty() ? "" : "; ") + std::string(b);
  }
  return out;
}

}  // namespace lra::host::bench
