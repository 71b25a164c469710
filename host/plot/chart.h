// plot/chart.h — the chart machinery of the host's hand-written SVG reports
// (bench/report_svg.cpp, forgetting/plot_svg.cpp): scales and their ticks,
// plot areas, the page, gridlines and axis labels, markers, the palette and
// the legend column. Knows nothing of what is plotted. Torch-free.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plot/svg_text.h"

namespace lra::host::svg {

// --- colours and text width -------------------------------------------------

// tab10, then tab20's light shades.
inline constexpr std::size_t kPaletteSize = 20;
// The i-th colour of the first `colours` palette entries (10: tab10), repeating beyond them.
std::string palette_colour(std::size_t i, std::size_t colours = kPaletteSize);

// UTF-8 code points in `text`.
std::size_t characters(std::string_view text);
// The estimated width in px of `text` at `char_width` px per character (6.5: font-size 11).
double text_width(std::string_view text, double char_width = 6.5);

// --- scales and ticks -------------------------------------------------------

// Ticks at 1, 2 and 5 × 10^e inside [10^lo, 10^hi]; where that gives more
// than 10, powers of ten only (every k-th one on a very wide range).
std::vector<Tick> log_ticks(double lo, double hi);

// Powers of two inside [10^lo, 10^hi], every k-th one so that at most 10
// remain; a range holding fewer than three gets round linear values instead.
std::vector<Tick> log2_ticks(double lo, double hi);

// One axis: value -> fraction of the panel, linear or log10.
struct Scale {
  bool log = false;
  double lo = 0, hi = 1;  // on a log scale, log10 of the bounds

  // In [0, 1]; a value outside is clamped, a non-finite result is 0.
  double fraction(double v) const;
  // linear_ticks, or log_ticks on a log scale.
  std::vector<Tick> ticks() const;
};

// Positive values (speeds, memories): linear from zero, or log10 when they
// span more than 10x so the small ones do not all sit on the floor, padded
// by `pad` of the span at both ends. [0, 1] when there are none.
Scale value_scale(const std::vector<double>& values, double pad);

// The plotted range around `values`: padded by `pad` of their span, or by
// `single` either side when they coincide; [0, 1] when there are none.
Scale padded_scale(const std::vector<double>& values, double pad, double single);

// A plot area in pixels.
struct Frame {
  double left, top, right, bottom;
};

// A plot area and its scales.
struct Panel : Frame {
  Scale x, y;

  double px(double v) const { return left + x.fraction(v) * (right - left); }
  double py(double v) const { return bottom - y.fraction(v) * (bottom - top); }
};

// --- the page and the axes --------------------------------------------------

// The <svg> element (DejaVu Sans 12), its <title> and a white background.
void open_svg(std::string& s, double width, double height, const std::string& title);
// The page title (16) centred at the top, and a grey subtitle below it when given.
void page_heading(std::string& s, double width, const std::string& title, const std::string& subtitle);

// Gridlines, the frame and the tick labels; `px`/`py` place a tick's value.
void draw_grid(std::string& s, const Frame& f, const std::vector<Tick>& x_ticks,
               const std::function<double(double)>& px, const std::vector<Tick>& y_ticks,
               const std::function<double(double)>& py);
void draw_grid(std::string& s, const Panel& p, const std::vector<Tick>& x_ticks, const std::vector<Tick>& y_ticks);

// The x label below the tick labels, the y label rotated `y_gap` px left of
// the frame. Both are SVG text as given (not escaped).
void axis_labels(std::string& s, const Frame& f, const std::string& x_label, const std::string& y_label,
                 double y_gap);
// A title (14) above the frame, as given (not escaped); nothing when empty.
void panel_title(std::string& s, const Frame& f, const std::string& title);
// Grey text in the middle of the frame, as given (not escaped).
void no_data_note(std::string& s, const Frame& f, const char* text);

// --- marks ------------------------------------------------------------------

// A <circle> with `extra` attributes and a tooltip.
std::string circle(double x, double y, double r, const std::string& fill, const std::string& extra,
                   const std::string& tooltip);
// A failed measurement: an × of half-width r in `colour`, the tooltip saying why.
std::string failure_mark(double x, double y, double r, const std::string& colour, const std::string& tooltip);

// --- the legend -------------------------------------------------------------

// Legend rows in a column right of the plot, from (x, y) down, each with a
// 24 px sample and its text 32 px right of the column's edge.
class Legend {
 public:
  static constexpr double kRow = 18;       // px per row
  static constexpr double kTextIndent = 32;

  // A row's text; with a tooltip (usually the full text of a shortened one).
  struct Text {
    Text(const char* shown) : shown(shown) {}             // NOLINT: implicit, plain text
    Text(std::string shown) : shown(std::move(shown)) {}  // NOLINT: implicit, plain text
    Text(std::string shown, std::string tooltip) : shown(std::move(shown)), tooltip(std::move(tooltip)) {}
    std::string shown;
    std::optional<std::string> tooltip;
  };
  // `full` cut to `max_chars` characters, the full text as the tooltip.
  static Text cut(const std::string& full, std::size_t max_chars);

  Legend(std::string& s, double x, double y) : s_(s), x_(x), y_(y) {}

  // A line sample, dashed by `dash` ("6,3") when given.
  void line(const std::string& colour, const Text& text, const char* dash = nullptr);
  // A line with a marker on it (a plotted series); the marker's tooltip is the full text.
  void series(const std::string& colour, const Text& text);
  // A translucent dot (a bubble); its tooltip is the full text.
  void dot(const std::string& colour, const Text& text);
  // A translucent square (a shaded region).
  void area(const std::string& colour, const Text& text);
  // An × (failed measurements).
  void cross(const std::string& colour, const Text& text);
  // Grey text without a sample, `indent` px right of the column's edge.
  void note(const std::string& text, double indent = 0);
  // Half a row of space.
  void gap() { y_ += kRow / 2; }

 private:
  void label(const Text& text);

  std::string& s_;
  double x_, y_;
};

}  // namespace lra::host::svg
