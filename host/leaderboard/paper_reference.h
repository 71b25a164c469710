// The LRA paper's Table 1 rows (Tay et al., "Long Range Arena: A Benchmark for
// Efficient Transformers", ICLR 2021), shown on the leaderboard as reference
// rows beside measured entries.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace lra::host {

struct PaperRow {
  std::string plugin;                 // the built-in plugin implementing the model, e.g. "linear_transformer"
  std::string model;                  // the paper's name, e.g. "Linear Trans."
  std::map<std::string, double> accuracy_percent;  // the five tasks other than pathx (Path-X: FAIL for all)
  double average_percent = 0;         // as printed in the paper
};

// The 11 rows in the paper's order.
const std::vector<PaperRow>& paper_table1();

// The self-pretraining paper's rows (Amos, Berant and Gupta, "Never Train from
// Scratch", ICLR 2024), the reference block of the self-pretrained division:
// each with the six tasks it reports (Path-X included) and its printed average.
// `model` names the row as the paper does; `plugin` the built-in mixer closest
// to it ("" when none). kSptPaperSource says where the numbers come from.
const std::vector<PaperRow>& spt_paper_rows();
extern const char* const kSptPaperSource;

}  // namespace lra::host
