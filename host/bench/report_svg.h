// bench/report_svg.h — the SVG charts of `lrahost bench`: speed and memory
// against length, or the LRA paper's Figure 3 when accuracies are given.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bench/bench_point.h"

namespace lra::host::bench {

// Hand-written SVG 1.1. Without accuracies: "training steps/s" and "peak
// memory (GB)" against length side by side, one colour per plugin, failed
// points as crosses at the top of the panels. With accuracies (plugin ->
// average LRA accuracy in %): instead the paper's Figure 3 — steps/s at each
// plugin's longest ok length against accuracy, bubble area proportional to
// peak memory there; plugins lacking an accuracy or an ok point are listed
// in a note.
std::string bench_svg(const std::vector<BenchPoint>& points,
                      const std::map<std::string, double>& accuracy = {});

}  // namespace lra::host::bench
