#include "rules/summary_position.h"

namespace lra::host {

std::string summary_position_name(SummaryPosition p) {
  switch (p) {
    case SummaryPosition::first: return "first";
    case SummaryPosition::after_last: return "after_last";
    case SummaryPosition::mean: return "mean";
  }
  return "first";
}

std::optional<SummaryPosition> summary_position_from_name(const std::string& name) {
  for (const SummaryPosition p : {SummaryPosition::first, SummaryPosition::after_last, SummaryPosition::mean})
    if (summary_position_name(p) == name) return p;
  return std::nullopt;
}

SummaryPosition lra_summary_position(const std::string& pooling) {
  return pooling == "cls" || pooling == "first" ? SummaryPosition::first : SummaryPosition::mean;
}

bool summary_fits_pooling(SummaryPosition p, const std::string& pooling) {
  return (p == SummaryPosition::mean) == (lra_summary_position(pooling) == SummaryPosition::mean);
}

}  // namespace lra::host
