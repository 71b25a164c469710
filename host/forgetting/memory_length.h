// forgetting/memory_length.h — the project's memory-length rule (reference
// forgetting-curve.md §10), computed over the tested lengths L1 < ... < Lk.
#pragma once

#include <vector>

#include "forgetting/curve.h"

namespace lra::host::forgetting {

// Fine-grained memory length: the largest tested Lj with copy_mean > 0.99 at
// every tested Li <= Lj; 0 when the condition fails at L1. A point with an
// error ends the scan (the condition is unknown there), so the value is then
// never censored. censored = the condition held at every point and all points
// are ok (the paper's "> Lk"). No points: {0, not censored}.
// Reads copy_mean and lm_mean: summarize the points first (finalize does).
MemoryLength fine_length(const std::vector<CurvePoint>& points);

// Coarse-grained memory length: as fine_length with the condition
// copy_mean - lm_mean > 0.01.
MemoryLength coarse_length(const std::vector<CurvePoint>& points);

// Summarizes every ok point, then sets complete, fine and coarse. Throws
// lra::Error(data) when the lengths are not strictly ascending, or from
// summarize.
void finalize(Curve& curve);

}  // namespace lra::host::forgetting
