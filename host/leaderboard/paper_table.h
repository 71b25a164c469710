// LRA paper Table 1 (test accuracy, %), for printing a run next to the
// published figure of the same model. Source: Tay et al., "Long Range Arena",
// ICLR 2021, Table 1 (docs/leaderboard.md, "The page", reference rows).
#pragma once

#include <optional>
#include <string>

namespace lra::host {

inline std::optional<double> paper_accuracy(const std::string& model, const std::string& task) {
  struct Row { const char* model; double listops, text, retrieval, image, pathfinder; };
  static const Row rows[] = {
      {"transformer", 36.37, 64.27, 57.46, 42.44, 71.40},
      {"local", 15.82, 52.98, 53.39, 41.46, 66.63},
      {"sparse_transformer", 17.07, 63.58, 59.59, 44.24, 71.71},
      {"longformer", 35.63, 62.85, 56.89, 42.22, 69.71},
      {"linformer", 35.70, 53.94, 52.27, 38.56, 76.34},
      {"reformer", 37.27, 56.10, 53.40, 38.07, 68.50},
      {"sinkhorn", 33.67, 61.20, 53.83, 41.23, 67.45},
      {"synthesizer", 36.99, 61.68, 54.67, 41.61, 69.45},
      {"bigbird", 36.05, 64.02, 59.29, 40.83, 74.87},
      {"linear_transformer", 16.13, 65.90, 53.09, 42.34, 75.30},
      {"performer", 18.01, 65.40, 53.82, 42.77, 77.05},
  };
  for (const auto& r : rows) {
    if (model != r.model) continue;
    if (task == "listops") return r.listops;
    if (task == "text") return r.text;
    if (task == "retrieval") return r.retrieval;
    if (task == "image") return r.image;
    if (task == "pathfinder") return r.pathfinder;
    return std::nullopt;  // Path-X: every model FAILs in the paper
  }
  return std::nullopt;
}

}  // namespace lra::host
