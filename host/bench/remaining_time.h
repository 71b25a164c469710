// bench/remaining_time.h — how long the rest of a bench sweep will take,
// learnt from the configurations measured so far. A sweep's configurations
// differ in cost by orders of magnitude (a 4K-token attention step is ~16x a
// 1K one), so the average time per configuration so far, the usual ETA, says
// "46 s left" before a two-minute configuration. Here each configuration is
// predicted from what was measured:
//   - the same plugin at a shorter length, scaled by (L / L')^e, where e is
//     that plugin's own growth between its last two lengths (clamped to
//     [1, 2]), else the growth seen for other plugins, else 2 (attention);
//   - a plugin not measured yet: the mean of the measured plugins at that
//     length, or scaled as above from their longest.
// Nothing measured: no estimate.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lra::host::bench {

class RemainingTime {
 public:
  void record(const std::string& plugin, int64_t length, double seconds);
  // Seconds for the configurations still to measure; nullopt before any record.
  std::optional<double> estimate(const std::vector<std::pair<std::string, int64_t>>& remaining) const;

 private:
  std::optional<double> predict(const std::string& plugin, int64_t length) const;
  double growth_of(const std::string& plugin) const;  // the plugin's exponent, else the others', else 2
  std::map<std::string, std::map<int64_t, double>> seconds_;  // plugin -> length -> seconds
};

// "[3/8, 1 min 2 s so far, about 4 min left]" (no estimate: "[1/8]").
std::string progress_text(std::size_t done, std::size_t total, double elapsed, std::optional<double> left);

}  // namespace lra::host::bench
