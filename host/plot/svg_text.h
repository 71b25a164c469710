// plot/svg_text.h — the pieces every hand-written SVG report of the host
// shares (the forgetting plots, the bench charts): safe text, locale-free
// numbers, round axis ticks. Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"

namespace lra::host::svg {

// Safe text (common/text.h), where the SVG reports have always found it.
using text::visible_text;
using text::xml_escape;

// Fixed-point text, independent of the locale; non-finite values become 0 so
// that no "nan" or "inf" reaches an SVG or report.
std::string fixed(double v, int decimals);

// A coordinate: two decimals, trailing zeros dropped.
std::string coord(double v);

// At most `max_chars` characters (UTF-8 code points), "…" marking a cut.
std::string shorten(const std::string& text, std::size_t max_chars);

struct Tick {
  double value;
  std::string label;
};

// 5-10 round ticks (1, 2, 5 × 10^e; 2.5 only where those give none) in [lo, hi].
std::vector<Tick> linear_ticks(double lo, double hi);

// An SVG path drawing an × of half-width r centred at (x, y).
std::string cross_path(double x, double y, double r);

}  // namespace lra::host::svg
