#include "runs/sequence_model.h"

#include "lra/status.h"

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
  if (m.model.pooling != "none")
    throw Error(ErrorKind::rules, where + "task '" + task + "' is a sequence task (a target per position): its model has "
                                          "a head at every position, model.pooling must be \"none\", not \"" +
                                          m.model.pooling + "\"");
  if (!(mixer.capabilities & LRA_CAP_CAUSAL))
    throw Error(ErrorKind::rules, "task '" + task + "' is a sequence task: its model predicts position t from tokens "
                                  "0..t, so its mixer runs causally, and '" + mixer.name +
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
  return {{"scored", "position"},
          {"test_positions", test.positions},
          {"test_example_accuracy", test.example_accuracy},
          {"test_cells", cells}};
}

}  // namespace lra::host
