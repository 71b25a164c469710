// bench/report_grid.h — what the bench reports (Markdown tables, SVG charts)
// share: the points as a plugin x length grid, the two measured quantities
// (speed, memory) and how their numbers are written. Internal to bench/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_point.h"
#include "common/text.h"

namespace lra::host::bench {

// Speed-ups and memory ratios are against this plugin, as in the paper's Table 2.
inline constexpr const char* kReference = "transformer";

inline bool ok(const BenchPoint& p) { return p.status == "ok"; }

// `digits` significant digits in fixed notation: 2 -> "2.00" (3), 0.1206 -> "0.12" (2).
std::string significant(double v, int digits);

// The paper's column names: 1024 -> "1K", 3072 -> "3K"; other lengths as they are.
std::string length_label(int64_t length);

// Peak memory in the paper's GB (10^9 bytes).
double memory_gb(const BenchPoint& p);

// A measured quantity: its value and how it is written.
struct Quantity {
  double (*value)(const BenchPoint&);
  std::string (*text)(double);
};
extern const Quantity kSpeed;   // steps/s, 3 significant digits
extern const Quantity kMemory;  // "1.23 GB"

// "5.00 (2.5x)": the value with `unit` and, when the reference point is
// given and measured a positive value, the ratio to it (`note` follows the "x").
std::string with_ratio(const Quantity& q, const BenchPoint& p, const BenchPoint* reference,
                       const std::string& unit = "", const std::string& note = "");

// Plugins in input order, lengths ascending, and the point of each pair (the
// first where one occurs twice).
class Grid {
 public:
  explicit Grid(const std::vector<BenchPoint>& points);

  const BenchPoint* at(const std::string& plugin, int64_t length) const;
  // The reference point at `length` when it is ok, else null.
  const BenchPoint* reference(int64_t length) const;
  bool has_reference() const;

  std::vector<std::string> plugins;
  std::vector<int64_t> lengths;

 private:
  std::map<std::pair<std::string, int64_t>, const BenchPoint*> cells_;
};

// The distinct non-empty values of one field, in input order, joined by ", ".
template <class Field>
std::string distinct(const std::vector<BenchPoint>& points, Field field) {
  std::vector<std::string> seen;
  for (const BenchPoint& p : points) {
    const std::string v = field(p);
    if (!v.empty() && std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
  }
  return text::join(seen, ", ");
}

// The distinct batch sizes, "32, 64".
std::string batches(const std::vector<BenchPoint>& points);

}  // namespace lra::host::bench
