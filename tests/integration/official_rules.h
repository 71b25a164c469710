// The "rules" an official run of a task records under its current release:
// the reference Transformer the host counts from the official manifest, the
// manifest's budget ratio, and the budget they give. Tests that forge a
// closed claim copy it, as a forger would (it is public arithmetic); link
// lra_host_runs.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "manifest/releases.h"
#include "rules/rules.h"
#include "runs/official_registry.h"

namespace lra::test {

inline nlohmann::json official_rules(const std::string& task) {
  const auto current = lra::host::current_release(task);
  if (!current) throw std::runtime_error("no current release of " + task);
  for (const auto& m : lra::host::registry_official(task)) {
    if (m.sha256 != current->sha256) continue;
    const double ratio = m.config["rules"]["param_budget_ratio"].get<double>();
    return {{"reference_params", m.reference_params},
            {"param_budget_ratio", ratio},
            {"param_budget", lra::host::param_budget(m.reference_params, ratio)}};
  }
  throw std::runtime_error("the registry has no manifest for the current release of " + task);
}

}  // namespace lra::test
