#include "bench/report_grid.h"

#include <cmath>
#include <set>

#include "plot/svg_text.h"

namespace lra::host::bench {

using svg::fixed;

namespace {

// The paper's GB: 10^9 bytes.
constexpr double kBytesPerGB = 1e9;

}  // namespace

std::string significant(double v, int digits) {
  if (!std::isfinite(v) || v <= 0) return fixed(v, digits - 1);
  int decimals = std::clamp(digits - 1 - static_cast<int>(std::floor(std::log10(v))), 0, 12);
  // Rounding can carry into a new digit (9.96 -> "10.0"): one decimal fewer then.
  if (decimals > 0 && std::round(v * std::pow(10.0, decimals)) >= std::pow(10.0, digits)) --decimals;
  return fixed(v, decimals);
}

std::string length_label(int64_t length) {
  return length > 0 && length % 1024 == 0 ? std::to_string(length / 1024) + "K" : std::to_string(length);
}

double memory_gb(const BenchPoint& p) { return static_cast<double>(p.peak_memory_bytes) / kBytesPerGB; }

const Quantity kSpeed{[](const BenchPoint& p) { return p.steps_per_s; },
                      [](double v) { return significant(v, 3); }};
const Quantity kMemory{memory_gb, [](double v) { return fixed(v, 2) + " GB"; }};

std::string with_ratio(const Quantity& q, const BenchPoint& p, const BenchPoint* reference,
                       const std::string& unit, const std::string& note) {
  const double v = q.value(p);
  std::string s = q.text(v) + unit;
  if (reference != nullptr) {
    const double r = q.value(*reference);
    if (std::isfinite(r) && r > 0 && std::isfinite(v) && v >= 0) {
      s += " (" + significant(v / r, 2) + "x" + note + ")";
    }
  }
  return s;
}

Grid::Grid(const std::vector<BenchPoint>& points) {
  std::set<int64_t> ascending;
  for (const BenchPoint& p : points) {
    if (std::find(plugins.begin(), plugins.end(), p.plugin) == plugins.end()) plugins.push_back(p.plugin);
    ascending.insert(p.length);
    cells_.emplace(std::make_pair(p.plugin, p.length), &p);
  }
  lengths.assign(ascending.begin(), ascending.end());
}

const BenchPoint* Grid::at(const std::string& plugin, int64_t length) const {
  const auto it = cells_.find({plugin, length});
  return it == cells_.end() ? nullptr : it->second;
}

const BenchPoint* Grid::reference(int64_t length) const {
  const BenchPoint* r = at(kReference, length);
  return r != nullptr && ok(*r) ? r : nullptr;
}

bool Grid::has_reference() const {
  return std::any_of(lengths.begin(), lengths.end(), [&](int64_t n) { return reference(n) != nullptr; });
}

std::string batches(const std::vector<BenchPoint>& points) {
  return distinct(points, [](const BenchPoint& p) { return p.batch > 0 ? std::to_string(p.batch) : ""; });
}

}  // namespace lra::host::bench
