#include "rules/summary_position.h"

namespace lra::host {

std::string summary_position_name(SummaryPosition p) {
  switch (p) {
    case SummaryPosition::first: return "first";
    case SummaryPosition::after_last: return "after_last";
    case SummaryPosition::mean: return "mean";
    case SummaryPosition::every_position: return "every_position";
  }
  return "first";
}

std::optional<SummaryPosition> summary_position_from_name(const std::string& name) {
  for (const SummaryPosition p : {SummaryPosition::first, SummaryPosition::after_last, SummaryPosition::mean,
                                  SummaryPosition::every_position})
    if (summary_position_name(p) == name) return p;
  return std::nullopt;
}

SummaryPosition lra_summary_position(const std::string& pooling) {
  if (pooling == "none") return SummaryPosition::every_position;
  return pooling == "cls" || pooling == "first" ? SummaryPosition::first : SummaryPosition::mean;
}

bool summary_fits_pooling(SummaryPosition p, const std::string& pooling) {
  const SummaryPosition lra = lra_summary_position(pooling);
  if (lra == SummaryPosition::every_position || p == SummaryPosition::every_position) return p == lra;
  return (p == SummaryPosition::mean) == (lra == SummaryPosition::mean);
}

}  // namespace lra::host
