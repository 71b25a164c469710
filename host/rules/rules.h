// The rule tiers of docs/rules.md ("Tiers"): which division a run belongs to, and the
// parameter budget (LRA's "at most 10% more than the reference Transformer").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lra::host {

struct RunDivision {
  std::string name = "closed";       // "closed" or "open"
  std::vector<std::string> reasons;  // why it is open (empty for closed)
  void open_because(std::string why) {
    name = "open";
    reasons.push_back(std::move(why));
  }
};

// What the user chose that can move a run out of the closed division.
struct RunChoices {
  std::string task;
  std::string manifest_label;     // e.g. "preset 'smoke'" or "manifest my.toml"
  std::string manifest_sha256;    // of the manifest text actually used
  std::string official_name;      // e.g. "lra-v1/listops.toml" ("" = none)
  std::string official_sha256;    // "" when the task has no official manifest
  std::vector<std::string> overrides;  // --set KEY=VALUE on fixed keys
  // The first `configured` overrides come from a reference configuration
  // (run --reference), named by `configured_by` ("--reference table1").
  std::size_t configured = 0;
  std::string configured_by;
};
RunDivision classify_run(const RunChoices& c);

struct ParamBudget {
  int64_t reference = 0;  // the task's reference Transformer
  double ratio = 1.1;
  int64_t budget = 0;     // floor(reference * ratio)
};
ParamBudget compute_param_budget(int64_t reference, double ratio);

// floor(reference * ratio), where a product within 1e-9 (relative) of a whole
// number counts as that number: 20 * 1.15 is 22.999999999999996 in doubles.
// The trainer and `verify` both use this, so they cannot disagree.
int64_t param_budget(int64_t reference, double ratio);

// Throws lra::Error(rules) naming the plugin and all three counts when over budget.
void enforce_param_budget(const ParamBudget& b, int64_t total, const std::string& plugin);

std::string with_commas(int64_t n);

}  // namespace lra::host
