// curves/learning_curves.h — a run's learning curves from its result.json
// history: history.csv (one row per report) and curves.svg (loss and accuracy
// against the update step), for one run or overlaid for several (`lrahost
// curves`, `suite`). Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lra::host {

// One report of a run: the update it was made after and what was measured.
struct ReportPoint {
  int64_t step = 0;
  std::optional<double> lr, train_loss, train_accuracy, val_loss, val_accuracy, steps_per_second;
};

struct LearningCurve {
  std::string label;                      // legend text, e.g. "transformer on listops, seed 0"
  std::vector<ReportPoint> points;        // ascending steps
  std::optional<double> majority_class;   // the test split's majority-class rate, when known
  std::optional<double> test_accuracy;    // the final model's, when known
};

// The curve of a result.json (its history, metrics.majority_class_rate and
// test_accuracy); `speeds` ({step: steps/s}) fills the speed column where
// the run measured it. Throws lra::Error(data) naming `source` and the field
// when history is missing or malformed.
LearningCurve learning_curve(const nlohmann::json& result, const std::string& source,
                             const std::map<int64_t, double>& speeds = {});

// The first phase of a self-pretrained run (result.json "pretraining": its
// history; the accuracy is the share of predicted tokens right). Throws
// lra::Error(data) when the result has no such phase.
LearningCurve pretraining_curve(const nlohmann::json& result, const std::string& source,
                                const std::map<int64_t, double>& speeds = {});

// history_csv of several phases in one table, a first column naming each
// row's phase ("pretraining", "fine-tuning"); steps count within a phase.
std::string phases_history_csv(const std::vector<std::pair<std::string, LearningCurve>>& phases);

// "step,lr,train_loss,train_accuracy,val_loss,val_accuracy,steps_per_second"
// and one row per report; a value the report lacks is an empty cell.
std::string history_csv(const LearningCurve& curve);

// Two panels (loss, accuracy) against the update step: training solid,
// validation dashed, one colour per curve; the majority-class rate as a grey
// line when every curve shares it. `title` as given (escaped here).
std::string curves_svg(const std::vector<LearningCurve>& curves, const std::string& title);

}  // namespace lra::host
