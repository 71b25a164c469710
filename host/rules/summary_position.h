// rules/summary_position.h — where a classifier reads its summary
// (docs/rules.md#causal-mixers-and-the-summary-token). LRA reads position 0:
// the prepended CLS token, or a document's first token. A mixer that only
// looks back fills position 0 with nothing but itself, so the host probes
// each mixer (model/summary_probe.h) and gives one that does not read ahead
// its summary after each example's last real token. Mean pooling reads every
// position. The names are what result.json records as model.summary.
#pragma once

#include <optional>
#include <string>

namespace lra::host {

// every_position: a sequence task's model (pooling "none") has no summary; its
// head reads every position.
enum class SummaryPosition { first, after_last, mean, every_position };

// "first", "after_last", "mean", "every_position".
std::string summary_position_name(SummaryPosition p);
std::optional<SummaryPosition> summary_position_from_name(const std::string& name);

// LRA's placement whatever the mixer, from model.pooling: "mean" for the mean
// poolings, "every_position" for "none", else "first" (what a result without
// model.summary ran).
SummaryPosition lra_summary_position(const std::string& pooling);

// Whether `p` is a position the pooling can have: "mean" exactly for the mean
// poolings, "first" or "after_last" for "cls" and "first".
bool summary_fits_pooling(SummaryPosition p, const std::string& pooling);

}  // namespace lra::host
