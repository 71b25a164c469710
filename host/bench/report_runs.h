// bench/report_runs.h — the reports of `lrahost bench --task`: bench.json's
// "runs" (one object per plugin and task, with its measured rates, schedule
// and predicted wall time) and "suite" totals, and the Markdown table.
#pragma once

#include "common/text.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/task_bench.h"

namespace lra::host::bench {

// Per plugin: the predicted wall time of all trial seeds of the LRA tasks
// measured other than Path-X, and of Path-X apart (the suite command runs both).
struct SuiteTotal {
  std::string plugin;
  std::vector<std::string> tasks;   // the measured tasks other than pathx, in order
  double lra_tasks_s = 0;           // sum over those tasks of seeds x one run
  bool pathx = false;
  double pathx_s = 0;               // seeds x one Path-X run
  bool complete = true;             // false when a task's measurement failed (its time is not in the sums)
};

std::vector<SuiteTotal> suite_totals(const std::vector<TaskRunEstimate>& runs);

nlohmann::json run_estimates_json(const std::vector<TaskRunEstimate>& runs);
std::string run_estimates_markdown(const std::vector<TaskRunEstimate>& runs);

using text::human_duration;  // common/text.h

}  // namespace lra::host::bench
