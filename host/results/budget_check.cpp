// verify's parameter-budget stage: the recorded budget is the rules' own
// (floor(reference_params * ratio)) and the model stays within it.
#include "results/verify_checks.h"

#include <cmath>

#include "rules/rules.h"

namespace lra::host::verify_internal {

using nlohmann::json;

void check_param_budget(Checker& c, const ResultFields& f) {
  const json* reference_params = f.reference_params;
  const json* ratio = f.budget_ratio;
  const json* budget = f.budget;
  const json* total = f.params_total;
  const auto ref = as_i64(reference_params);
  const auto bud = as_i64(budget);
  const auto tot = as_i64(total);
  if (reference_params && (!ref || *ref <= 0)) {
    c.fail("rules.reference_params must be a positive integer, found " + show(*reference_params));
  }
  const bool ratio_ok = ratio && std::isfinite(ratio->get<double>()) && ratio->get<double>() > 0.0;
  if (ratio && !ratio_ok) {
    c.fail("rules.param_budget_ratio must be a positive number, found " + show(*ratio));
  }
  if (budget && !bud) c.fail("rules.param_budget is out of range: " + show(*budget));
  if (total && (!tot || *tot < 0)) {
    c.fail("plugin.params.total must be a non-negative integer, found " + show(*total));
  }
  if (ref && *ref > 0 && ratio_ok && bud) {
    const std::int64_t expected = param_budget(*ref, ratio->get<double>());
    if (*bud != expected) {
      c.fail("rules.param_budget " + std::to_string(*bud) + " != floor(rules.reference_params " +
             std::to_string(*ref) + " * rules.param_budget_ratio " + show(*ratio) + ") = " +
             std::to_string(expected));
    }
  }
  if (tot && bud && *tot > *bud) {
    c.fail("plugin.params.total " + std::to_string(*tot) + " exceeds rules.param_budget " +
           std::to_string(*bud) + " (the model may have at most that many parameters)");
  }
}

}  // namespace lra::host::verify_internal
