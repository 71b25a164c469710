#include "rules/rules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "lra/status.h"

namespace lra::host {

RunDivision classify_run(const RunChoices& c) {
  RunDivision d;
  if (c.official_sha256.empty())
    d.open_because("task '" + c.task + "' has no official manifest in this host");
  else if (c.manifest_sha256 != c.official_sha256)
    d.open_because(c.manifest_label + " differs from the official " + c.official_name);
  for (std::size_t i = 0; i < c.overrides.size(); ++i)
    d.open_because(i < c.configured ? c.configured_by + " sets " + c.overrides[i] + " (a fixed key)"
                                    : "--set " + c.overrides[i] + " changes a fixed key");
  return d;
}

int64_t param_budget(int64_t reference, double ratio) {
  const long double x = static_cast<long double>(reference) * static_cast<long double>(ratio);
  const long double nearest = std::round(x);
  if (std::fabs(x - nearest) <= 1e-9L * std::max<long double>(1.0L, std::fabs(x))) return static_cast<int64_t>(nearest);
  return static_cast<int64_t>(std::floor(x));
}

ParamBudget compute_param_budget(int64_t reference, double ratio) {
  return {reference, ratio, param_budget(reference, ratio)};
}

std::string with_commas(int64_t n) {
  std::string s = std::to_string(n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0 && s[i - 1] != '-') out += ',';
    out += s[i];
  }
  return out;
}

void enforce_param_budget(const ParamBudget& b, int64_t total, const std::string& plugin) {
  if (total <= b.budget) return;
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%g", b.ratio);
  throw Error(ErrorKind::rules, "plugin '" + plugin + "' gives the model " + with_commas(total) +
                                    " parameters; the task's reference Transformer has " + with_commas(b.reference) +
                                    " and rules.param_budget_ratio " + ratio + " allows at most " +
                                    with_commas(b.budget) + ": reduce the mixer's parameters");
}

}  // namespace lra::host
