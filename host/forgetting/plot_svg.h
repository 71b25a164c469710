// forgetting/plot_svg.h — forgetting-curve plots as hand-written SVG 1.1 text,
// after the reference tool's PNG and the paper's Figure 1 (docs/forgetting.md,
// "Reading the plot"): copy accuracy orange, LM accuracy blue, mean ± 1
// std bands, training-length reference lines, memory phases shaded.
#pragma once

#include <string>
#include <vector>

#include "forgetting/curve.h"

namespace lra::host::forgetting {

struct PlotOptions {
  std::string title;   // empty: the curve's label (forgetting_svg) or "Forgetting curves" (compare_svg)
  bool log_x = false;  // logarithmic length axis, ticks at powers of two
  int width = 1000;    // pixels, legend column included; at least 500
  int height = 500;    // pixels; at least 250 (compare_svg grows it when its legend needs more)
};

// One curve: copy and LM accuracy with ±1 std bands and markers, failed
// lengths as red crosses on the x axis, dashed lines at train_length (red) and
// train_length / 2 (green) when train_length > 0, and the fine-grained,
// coarse-grained and amnesia phases shaded green, blue and red up to the last
// ok point before any failure; the legend also gives the prefix rule's lengths.
// Reads the summarized fields and the lengths: finalize the curve first. Throws lra::Error(usage) when the size is too small.
std::string forgetting_svg(const Curve& curve, const PlotOptions& options);

// Several curves overlaid, one tab10 colour per curve: copy solid, LM dashed,
// no bands or phases; the legend gives each curve's fine and coarse lengths.
// The length axis spans every curve's points.
std::string compare_svg(const std::vector<Curve>& curves, const PlotOptions& options);

}  // namespace lra::host::forgetting
