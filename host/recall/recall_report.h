// recall/recall_report.h — what researchers paste from sequence-task runs
// (the recall suites, docs/suites.md): accuracy per cell of the task's grid
// for every run, and accuracy against the state size the host measured, one
// point per mixer and width. Read from result.json files alone; torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lra::host {

struct RecallCell {
  std::string name;
  int64_t examples = 0, positions = 0;
  double accuracy = 0, example_accuracy = 0;
};

struct RecallRun {
  std::string file, plugin, task;
  int64_t width = 0;  // config.model.d_model
  double test_accuracy = 0, test_example_accuracy = 0;
  std::vector<RecallCell> cells;
  bool state_measured = false;
  std::string state_why;      // why not, when not measured
  int64_t state_length = 0;   // the longest length measured,
  int64_t state_bytes = 0;    // and the state's bytes there
  std::string label() const;  // "transformer, width 64"
};

// One run from its result.json. A file that is not a sequence task's result
// (no metrics.scored = "position") or lacks a member is lra::Error(data)
// naming the file and the member.
RecallRun read_recall_run(const nlohmann::json& result, const std::string& file);

// recall.md: per task, a table of accuracy per cell (share of scored
// positions right) with each run's state size, and one of examples wholly
// right; the files it read.
std::string recall_markdown(const std::vector<RecallRun>& runs);

// recall.svg: test accuracy against the measured state size at the longest
// measured length (log scale), one point per run, one colour per mixer; runs
// whose state was not measured are crosses in a strip of their own.
std::string recall_svg(const std::vector<RecallRun>& runs, const std::string& title);

}  // namespace lra::host
