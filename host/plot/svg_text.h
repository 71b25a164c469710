// plot/svg_text.h — the pieces every hand-written SVG report of the host
// shares (the forgetting plots, the bench charts): safe text, locale-free
// numbers, round axis ticks. Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lra::host::svg {

// Text from a file made safe to show to a person: characters that are
// invisible or reorder what surrounds them — C0/C1 controls (tab, newline and
// carriage return excepted), bidi embeddings, overrides and isolates
// (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), zero-width and
// other format characters (U+200B-U+200D, U+2060-U+2064, U+FEFF, U+180E,
// U+00AD) — are written as "<U+XXXX>", and each byte of invalid UTF-8 as
// "<0xNN>", so a plugin name cannot pass itself off as another.
std::string visible_text(std::string_view text);

// XML character data: visible_text, then markup escaped (the escapes' "<" and
// ">" included).
std::string xml_escape(std::string_view text);

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
