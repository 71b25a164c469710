// train/progress_check.h — what a checkpoint's progress record (state.json's
// "progress", written by the training loop and the classifier objective) may
// hold. A resumed run copies these values into its result and its summary, so
// a hand-edited state.json with best_val_accuracy 7.0 would otherwise print
// "best validation 700.00%" and seal it into result.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace lra::host {

// The first field of `progress` that is missing, mistyped or out of range for
// a checkpoint after `step` updates, as {"progress.FIELD", "is ..., expected ..."};
// nullopt when every field fits:
//   window_loss, final_train_loss    finite, >= 0 (sums and means of cross-entropy)
//   window_count                     a whole number >= 0
//   window_correct                   a whole number in 0..window_count
//   final_train_accuracy,
//   best_val_accuracy                in [0, 1]
//   best_val_step                    an integer in -1..step (-1: no validation yet)
//   history                          an array of objects, each with an integer "step"
//                                    in 1..step, ascending, and finite numbers
//                                    ("*accuracy" in [0, 1], "*loss" and "lr" >= 0)
std::optional<std::pair<std::string, std::string>> progress_problem(const nlohmann::json& progress, int64_t step);

}  // namespace lra::host
