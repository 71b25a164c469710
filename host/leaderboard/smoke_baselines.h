// leaderboard/smoke_baselines.h — the committed smoke baselines (issue 48):
// one smoke run of each built-in mixer per task, kept in
// docs/measured/cpu/baselines/<task>/<mixer>/result.json and compiled in from
// there (cmake/LraSmokeBaselines.cmake), so the run summary, the README check
// and the baselines page all read one source. The paper's Table 1 is for the
// official protocol only (leaderboard/paper_table.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace lra::host {

struct SmokeBaseline {
  std::string plugin, task;
  double test_accuracy = 0, majority_class_rate = 0;  // fractions, as result.json's metrics
  std::string file;                                   // relative to the source tree
};

const std::vector<SmokeBaseline>& smoke_baselines();

inline std::optional<SmokeBaseline> smoke_baseline(const std::string& plugin, const std::string& task) {
  for (const auto& b : smoke_baselines())
    if (b.plugin == plugin && b.task == task) return b;
  return std::nullopt;
}

}  // namespace lra::host
