// runs/sequence_model.h — what a run of a sequence task (lra::Dataset::sequence,
// SDK 1.4) adds to a classification run: the manifest and the mixer must fit a
// per-position causal model, and its result counts scored positions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lra/task.h"
#include "model/backbone.h"
#include "manifest/manifest.h"
#include "plugins/descriptor.h"
#include "train/trainer.h"

namespace lra::host {

// A sequence task needs model.pooling "none" and a mixer that declares
// LRA_CAP_CAUSAL (the model predicts position t from tokens 0..t, or with
// readout from_last_state its causal encoder's last state is decoded at every
// position); a classification task needs a pooling. lra::Error(rules) naming
// the key or the capability otherwise.
void check_sequence_model(const Manifest& m, const lra::Dataset& data, const Descriptor& mixer,
                          const std::string& task);

// The metrics members a sequence task's result adds: "scored": "position",
// test_example_accuracy, test_positions and test_cells (name, examples,
// positions, accuracy, example_accuracy), and "readout": "from_last_state"
// for such a task (SDK 1.5); null for a classification task.
nlohmann::json sequence_metrics(const lra::Dataset& data, const EvalResult& test);

// A sequence task's result member state_size: model_state_size
// (plugins/state_size.h) at state_lengths(test, m.max_len).
nlohmann::json run_state_size(Classifier& model, const ModelConfig& m, const Descriptor& mixer, const lra::Split& test,
                              const torch::Device& device, uint64_t seed);

}  // namespace lra::host
