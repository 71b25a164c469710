#include "forgetting/stats.h"

#include <cmath>
#include <limits>
#include <string>

#include <boost/math/distributions/students_t.hpp>

#include "lra/status.h"

namespace lra::host::forgetting {

double mean(const std::vector<double>& xs) {
  if (xs.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (double x : xs) sum += x;
  return sum / static_cast<double>(xs.size());
}

double population_std(const std::vector<double>& xs) {
  const double m = mean(xs);
  if (xs.empty()) return m;
  double ss = 0;
  for (double x : xs) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(xs.size()));
}

double paired_t_test_p(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) {
    throw lra::Error(lra::ErrorKind::internal,
                     "paired t-test: the lists differ in length (" + std::to_string(a.size()) +
                         " and " + std::to_string(b.size()) + ")");
  }
  const std::size_t n = a.size();
  if (n < 2) return 1.0;
  std::vector<double> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = a[i] - b[i];
  const double md = mean(d);
  double ss = 0;
  for (double x : d) ss += (x - md) * (x - md);
  const double sd = std::sqrt(ss / static_cast<double>(n - 1));
  if (sd == 0) return md == 0 ? 1.0 : 0.0;
  const double t = md / (sd / std::sqrt(static_cast<double>(n)));
  if (std::isnan(t)) return 1.0;  // NaN accuracies: scipy's NaN, replaced as the tool does
  const boost::math::students_t dist(static_cast<double>(n - 1));
  return 2.0 * boost::math::cdf(boost::math::complement(dist, std::fabs(t)));
}

void summarize(CurvePoint& point) {
  const std::string where = "forgetting curve, length " + std::to_string(point.length);
  if (point.copy_accs.empty() || point.lm_accs.empty()) {
    throw lra::Error(lra::ErrorKind::data, where + ": no accuracies");
  }
  if (point.copy_accs.size() != point.lm_accs.size()) {
    throw lra::Error(lra::ErrorKind::data,
                     where + ": copy_accs has " + std::to_string(point.copy_accs.size()) +
                         " values but lm_accs has " + std::to_string(point.lm_accs.size()));
  }
  point.copy_mean = mean(point.copy_accs);
  point.copy_std = population_std(point.copy_accs);
  point.lm_mean = mean(point.lm_accs);
  point.lm_std = population_std(point.lm_accs);
  point.p_value = paired_t_test_p(point.lm_accs, point.copy_accs);
}

}  // namespace lra::host::forgetting
