// bench/remaining_time.cpp — see remaining_time.h.
#include "bench/remaining_time.h"

#include <algorithm>
#include <cmath>

#include "common/text.h"

namespace lra::host::bench {
namespace {

constexpr double kDefaultGrowth = 2.0;  // attention: quadratic in length

// The exponent between a plugin's last two measured lengths, if it has two.
std::optional<double> own_growth(const std::map<int64_t, double>& by_length) {
  if (by_length.size() < 2) return std::nullopt;
  auto last = std::prev(by_length.end());
  auto before = std::prev(last);
  if (before->second <= 0 || last->second <= 0) return std::nullopt;
  const double e = std::log(last->second / before->second) / std::log(static_cast<double>(last->first) / before->first);
  return std::clamp(e, 1.0, 2.0);
}

}  // namespace

void RemainingTime::record(const std::string& plugin, int64_t length, double seconds) {
  seconds_[plugin][length] = seconds;
}

double RemainingTime::growth_of(const std::string& plugin) const {
  if (const auto it = seconds_.find(plugin); it != seconds_.end())
    if (const auto e = own_growth(it->second)) return *e;
  double sum = 0;
  int n = 0;
  for (const auto& [other, by_length] : seconds_)
    if (const auto e = own_growth(by_length)) {
      sum += *e;
      ++n;
    }
  return n > 0 ? sum / n : kDefaultGrowth;
}

std::optional<double> RemainingTime::predict(const std::string& plugin, int64_t length) const {
  auto scaled = [&](const std::map<int64_t, double>& by_length, double growth) {
    // From the nearest measured length (the longest at or below, else the shortest).
    auto it = by_length.upper_bound(length);
    if (it != by_length.begin()) --it;
    return it->second * std::pow(static_cast<double>(length) / static_cast<double>(it->first), growth);
  };
  if (const auto it = seconds_.find(plugin); it != seconds_.end() && !it->second.empty())
    return scaled(it->second, growth_of(plugin));
  // Not measured yet: the mean over the plugins that were.
  double sum = 0;
  int n = 0;
  for (const auto& [other, by_length] : seconds_) {
    if (by_length.empty()) continue;
    sum += scaled(by_length, growth_of(other));
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

std::optional<double> RemainingTime::estimate(const std::vector<std::pair<std::string, int64_t>>& remaining) const {
  double total = 0;
  for (const auto& [plugin, length] : remaining) {
    const auto t = predict(plugin, length);
    if (!t) return std::nullopt;
    total += *t;
  }
  return total;
}

std::string progress_text(std::size_t done, std::size_t total, double elapsed, std::optional<double> left) {
  std::string out = "[" + std::to_string(done + 1) + "/" + std::to_string(total);
  if (done > 0) out += ", " + text::human_duration(elapsed) + " so far";
  if (left) out += ", about " + text::human_duration(*left) + " left";
  return out + "]";
}

}  // namespace lra::host::bench
