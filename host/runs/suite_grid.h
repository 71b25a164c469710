// runs/suite_grid.h — a suite over a manifest's [grid] (manifest/manifest.h):
// every point is a run, and the summary reports, for each point of the
// model's axes (Zoology's widths), the point of the training axes (learning
// rate, weight decay) with the best validation accuracy — the optimiser is
// tuned per model, on validation, never on test. Torch-free.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifest/manifest.h"

namespace lra::host {

struct GridPoint {
  std::vector<std::pair<std::string, std::string>> values;  // (axis, value as --set writes it), the grid's order
  std::vector<std::string> sets() const;      // {"model.d_model=128", "train.lr=0.01"}
  std::string folder() const;                 // "d_model-128_lr-0.01" ("" without a grid)
  std::string model_label() const;            // the model axes: "d_model 128" ("" when none)
  std::string train_label() const;            // the training axes: "lr 0.01" ("" when none)
};

// An axis value as --set writes it: integers without a fraction ("128"),
// others in their shortest exact form ("0.001").
std::string grid_value_text(double v);

// Every point of m's grid (the product of its axes, first axis slowest); one
// empty point for a manifest without a grid.
std::vector<GridPoint> grid_points(const Manifest& m);

// From a suite's run records ({"task", "setting" (optional: a protocol's
// [settings] name, "" or absent = its baseline), "point": {axis: value},
// "status", "best_val_accuracy", "test_accuracy", "run_dir", ...}): per task,
// setting and model point, the training point whose mean best validation
// accuracy over its finished seeds is highest, with its test accuracy's mean
// and its runs: [{"task", "setting", "model", "selected", "candidates"}]. A
// model point none of whose runs finished is listed with "selected": null.
// A record without a point (a run outside any grid) is its task's only
// candidate at the model point "".
nlohmann::json select_grid_points(const nlohmann::json& runs);

// From select_grid_points' selections: per task and model point, the mean
// over the task's settings of the chosen test accuracy (MAD's per-task score):
// [{"task", "model", "settings", "unfinished_settings", "score" (null unless
// every setting has a finished run)}], in the selections' order.
nlohmann::json task_scores(const nlohmann::json& selections);

// suite.md's section for the selections: one table per task.
std::string grid_selection_markdown(const nlohmann::json& selections);

}  // namespace lra::host
