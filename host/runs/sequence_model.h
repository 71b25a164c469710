// runs/sequence_model.h — what a run of a sequence task (lra::Dataset::sequence,
// SDK 1.4) adds to a classification run: the manifest and the mixer must fit a
// per-position causal model, and its result counts scored positions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lra/task.h"
#include "manifest/manifest.h"
#include "plugins/descriptor.h"
#include "train/trainer.h"

namespace lra::host {

// A sequence task needs model.pooling "none" and a mixer that declares
// LRA_CAP_CAUSAL (the model predicts position t from tokens 0..t); a
// classification task needs a pooling. lra::Error(rules) naming the key or
// the capability otherwise.
void check_sequence_model(const Manifest& m, const lra::Dataset& data, const Descriptor& mixer,
                          const std::string& task);

// The metrics members a sequence task's result adds: "scored": "position",
// test_example_accuracy, test_positions and test_cells (name, examples,
// positions, accuracy, example_accuracy); null for a classification task.
nlohmann::json sequence_metrics(const lra::Dataset& data, const EvalResult& test);

}  // namespace lra::host
