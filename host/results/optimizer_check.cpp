// verify's optimizer stage: the recorded AdamW groups (train/optimizer_groups.h)
// are ones the rules allow — a mixer's hints may only take weight decay to 0
// and lower the learning rate — and they cover every parameter exactly once.
// Results written before the record existed have none: nothing to check.
#include "results/verify_checks.h"

#include <cmath>
#include <set>

#include "common/json_input.h"

namespace lra::host::verify_internal {

using nlohmann::json;

void check_optimizer_groups(Checker& c, const json& result, const ResultFields& f) {
  const json* optimizer = json_at(result, {"optimizer"});
  if (!optimizer) return;
  const json* groups = json_at(*optimizer, {"groups"});
  if (!groups || !groups->is_array() || groups->empty() || groups->size() > 100000) {
    c.fail("optimizer.groups must be a non-empty array of the AdamW groups (at most 100,000)");
    return;
  }
  const json* wd = json_at(result, {"config", "train", "weight_decay"});
  const double manifest_wd = wd && wd->is_number() ? wd->get<double>() : NAN;
  std::set<std::string> seen;
  int64_t elements = 0;
  for (size_t i = 0; i < groups->size(); ++i) {
    const json& g = (*groups)[i];
    const std::string at = "optimizer.groups[" + std::to_string(i) + "]";
    const json* names = json_at(g, {"names"});
    const json* count = json_at(g, {"elements"});
    const json* gwd = json_at(g, {"weight_decay"});
    const json* factor = json_at(g, {"lr_factor"});
    // A parameter count bounded far above any model, so that the sum cannot overflow.
    constexpr int64_t kMaxElements = int64_t{1} << 40;
    const auto n_elements = as_i64(count);
    if (!names || !names->is_array() || !n_elements || *n_elements < 0 || *n_elements > kMaxElements || !gwd ||
        !gwd->is_number() || !factor || !factor->is_number()) {
      c.fail(at + " must have names (array), elements (an integer from 0 to 2^40), weight_decay and lr_factor "
                  "(numbers)");
      continue;
    }
    for (const auto& n : *names)
      if (!n.is_string() || !seen.insert(n.get<std::string>()).second)
        c.fail(at + ".names: " + show(n) + " is not a parameter name, or is in two groups");
    elements += *n_elements;
    const double w = gwd->get<double>(), lf = factor->get<double>();
    if (!(w == 0.0 || w == manifest_wd))
      c.fail(at + ".weight_decay is " + show(*gwd) + ": a group has the manifest's weight decay (" +
             show(wd ? *wd : json(nullptr)) + ") or none; a hint may only take it to 0");
    if (!(std::isfinite(lf) && lf > 0 && lf <= 1))
      c.fail(at + ".lr_factor is " + show(*factor) + ": a hint may only lower the learning rate (0 < lr_factor <= 1)");
    if (i == 0 && (lf != 1.0 || w != manifest_wd))
      c.fail(at + " is the group of parameters without hints: the manifest's weight decay and learning rate, found "
                  "weight_decay " + show(*gwd) + " and lr_factor " + show(*factor));
  }
  const auto total = as_i64(f.params_total);
  if (total && elements != *total)
    c.fail("optimizer.groups hold " + std::to_string(elements) + " parameter elements, plugin.params.total is " +
           std::to_string(*total) + ": every parameter belongs to exactly one group");
}

}  // namespace lra::host::verify_internal
