#include "runs/sequence_model.h"

#include <algorithm>

#include "lra/status.h"
#include "model/short_conv.h"
#include "plugins/state_size.h"

namespace lra::host {

void check_sequence_model(const Manifest& m, const lra::Dataset& data, const Descriptor& mixer,
                          const std::string& task) {
  const std::string where = m.source + ": ";
  if (!data.is_sequence_task()) {
    if (m.model.pooling == "none")
      throw Error(ErrorKind::rules, where + "model.pooling = \"none\" is for sequence tasks (a target per position); "
                                            "task '" + task + "' gives one label per example: use cls, mean, "
                                            "mean_padded or first");
    return;
  }
  const bool last_state = data.sequence.readout == lra::SequenceReadout::from_last_state;
  // from_last_state: the host pools itself (each example's last state), so a
  // manifest's pooling would describe a model that is not the one trained.
  if (m.model.pooling != "none")
    throw Error(ErrorKind::rules, where + "task '" + task + "' is a sequence task (a target per position): its model has " +
                                      (last_state ? "a decoder of each example's last state (readout from_last_state)"
                                                  : "a head at every position") +
                                      ", model.pooling must be \"none\", not \"" + m.model.pooling + "\"");
  if (!(mixer.capabilities & LRA_CAP_CAUSAL))
    throw Error(ErrorKind::rules, "task '" + task + "' is a sequence task: its model " +
                                      (last_state ? "encodes with causal blocks (MAD's AutoEncoder) and decodes every "
                                                    "position from the last state"
                                                  : "predicts position t from tokens 0..t") +
                                      ", so its mixer runs causally, and '" + mixer.name +
                                      "' does not declare LRA_CAP_CAUSAL");
}

nlohmann::json sequence_metrics(const lra::Dataset& data, const EvalResult& test) {
  if (!data.is_sequence_task()) return nullptr;
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : test.cells)
    cells.push_back({{"name", c.name},
                     {"examples", c.examples},
                     {"positions", c.positions},
                     {"accuracy", c.accuracy()},
                     {"example_accuracy", c.example_accuracy()}});
  nlohmann::json out = {{"scored", "position"},
                        {"test_positions", test.positions},
                        {"test_example_accuracy", test.example_accuracy},
                        {"test_cells", cells}};
  // SDK 1.5: said only when not the default, so results of every_position tasks read as before.
  if (data.sequence.readout == lra::SequenceReadout::from_last_state) out["readout"] = "from_last_state";
  return out;
}

nlohmann::json run_state_size(Classifier& model, const ModelConfig& m, const Descriptor& mixer, const lra::Split& test,
                              const torch::Device& device, uint64_t seed) {
  return model_state_size(model, m, mixer.name, mixer.abi_minor, state_lengths(test, m.max_len), device, seed);
}

}  // namespace lra::host
