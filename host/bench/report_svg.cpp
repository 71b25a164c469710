#include "bench/report_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "bench/report_grid.h"
#include "plot/chart.h"

namespace lra::host::bench {
namespace {

using svg::Legend;
using svg::no_data_note;
using svg::Panel;
using svg::Scale;
using svg::shorten;
using svg::Tick;
using svg::value_scale;

std::string colour(std::size_t plugin_index) { return svg::palette_colour(plugin_index); }

constexpr std::size_t kLabelChars = 24;  // legend and bubble labels; the full text is in the tooltip
constexpr std::size_t kNoteChars = 34;   // notes in the legend column

// Device, dtype and batch of the points, for the subtitle.
std::string setup_text(const std::vector<BenchPoint>& points) {
  const std::string batch = batches(points);
  std::string s;
  for (const std::string& part : {distinct(points, [](const BenchPoint& p) { return p.device; }),
                                  distinct(points, [](const BenchPoint& p) { return p.dtype; }),
                                  batch.empty() ? "" : "batch " + batch}) {
    if (!part.empty()) s += (s.empty() ? "" : ", ") + part;
  }
  return s;
}

// The page: title and, below it, the setup of the points.
void open_page(std::string& s, double width, double height, const std::string& title,
               const std::vector<BenchPoint>& points) {
  svg::open_svg(s, width, height, title);
  svg::page_heading(s, width, title, setup_text(points));
}

// Gridlines, frame, tick labels, axis labels and the panel's title.
void draw_axes(std::string& s, const Panel& p, const std::vector<Tick>& x_ticks,
               const std::vector<Tick>& y_ticks, const std::string& x_label, const std::string& y_label,
               const std::string& title) {
  svg::draw_grid(s, p, x_ticks, y_ticks);
  svg::axis_labels(s, p, x_label, y_label, 52);
  svg::panel_title(s, p, title);
}

// --- speed and memory against length ----------------------------------------

// Layout in pixels: two panels side by side, then the legend column.
constexpr double kLeft = 70, kTop = 80, kBottom = 60, kPanelWidth = 340, kPanelGap = 95;
constexpr double kLegendGap = 20, kLegendWidth = 230, kHeight = 460;
constexpr double kMinTickGap = 36;  // px between length labels

// The measured lengths as ticks, dropping those whose labels would collide.
std::vector<Tick> length_ticks(const Panel& p, const std::vector<int64_t>& lengths) {
  std::vector<Tick> out;
  for (int64_t n : lengths) {
    const double v = static_cast<double>(n);
    if (!out.empty() && p.px(v) - p.px(out.back().value) < kMinTickGap) continue;
    out.push_back({v, length_label(n)});
  }
  return out;
}

// One panel: a line and markers per plugin through its ok points (a failure
// breaks the line), failed points as crosses at the top, stacked per length.
void draw_panel(std::string& s, const Panel& p, const Grid& g, const Quantity& q, const char* unit) {
  std::map<int64_t, int> failed_at;  // crosses drawn per length so far
  for (std::size_t i = 0; i < g.plugins.size(); ++i) {
    const std::string& plugin = g.plugins[i];
    const std::string c = colour(i);
    std::vector<std::pair<double, double>> run;  // pixel positions of the current line
    auto flush = [&] {
      if (run.size() >= 2) {
        std::string pts;
        for (const auto& [x, y] : run) pts += svg::coord(x) + "," + svg::coord(y) + " ";
        pts.pop_back();
        s += "<polyline points=\"" + pts + "\" fill=\"none\" stroke=\"" + c + "\" stroke-width=\"2\"/>\n";
      }
      run.clear();
    };
    std::string markers;
    for (int64_t n : g.lengths) {
      const BenchPoint* pt = g.at(plugin, n);
      if (pt == nullptr) continue;
      const double v = q.value(*pt);
      const std::string where = plugin + ", " + length_label(n) + ": ";
      if (ok(*pt) && std::isfinite(v) && (!p.y.log || v > 0)) {
        const double x = p.px(static_cast<double>(n)), y = p.py(v);
        run.emplace_back(x, y);
        markers += svg::circle(x, y, 3.5, c, "",
                          where + with_ratio(q, *pt, g.reference(n), unit, std::string(" ") + kReference));
        continue;
      }
      flush();
      if (ok(*pt)) continue;
      const double y = std::min(p.top + 9 + 11 * failed_at[n]++, p.bottom - 6);
      s += svg::failure_mark(p.px(static_cast<double>(n)), y, 4.5, c,
                        where + (pt->status == "oom" ? "out of memory" : "error") +
                            (pt->error.empty() ? "" : ": " + pt->error));
    }
    flush();
    s += markers;
  }
}

std::vector<double> plotted(const std::vector<BenchPoint>& points, const Quantity& q) {
  std::vector<double> out;
  for (const BenchPoint& p : points) {
    const double v = q.value(p);
    if (ok(p) && std::isfinite(v) && v > 0) out.push_back(v);
  }
  return out;
}

std::string length_svg(const std::vector<BenchPoint>& points) {
  const Grid g(points);
  std::vector<double> lengths;
  for (int64_t n : g.lengths) lengths.push_back(static_cast<double>(n));
  const Scale x = svg::padded_scale(lengths, 0.06, lengths.empty() ? 0 : lengths.front() / 2);
  const double right1 = kLeft + kPanelWidth, left2 = right1 + kPanelGap, right2 = left2 + kPanelWidth;
  const double legend_x = right2 + kLegendGap, width = legend_x + kLegendWidth;
  const bool any_failed =
      std::any_of(points.begin(), points.end(), [](const BenchPoint& p) { return !ok(p); });
  const double legend_rows = static_cast<double>(g.plugins.size()) + (any_failed ? 1.5 : 0) + 1.5;
  const double height = std::max(kHeight, std::ceil(kTop + 6 + legend_rows * Legend::kRow));
  const Panel speed{{kLeft, kTop, right1, height - kBottom}, x, value_scale(plotted(points, kSpeed), 0.06)};
  const Panel memory{{left2, kTop, right2, height - kBottom}, x, value_scale(plotted(points, kMemory), 0.06)};

  std::string s;
  open_page(s, width, height, "Training speed and peak memory", points);
  const std::string length_axis = "Sequence length";
  draw_axes(s, speed, length_ticks(speed, g.lengths), speed.y.ticks(), length_axis,
            speed.y.log ? "steps/s (log scale)" : "steps/s", "training steps/s");
  draw_axes(s, memory, length_ticks(memory, g.lengths), memory.y.ticks(), length_axis,
            memory.y.log ? "GB (log scale)" : "GB", "peak memory (GB)");
  const bool no_ok = std::none_of(points.begin(), points.end(), ok);
  if (no_ok) {
    const char* note = points.empty() ? "no measurements" : "no successful measurements";
    no_data_note(s, speed, note);
    no_data_note(s, memory, note);
  }
  draw_panel(s, speed, g, kSpeed, " steps/s");
  draw_panel(s, memory, g, kMemory, "");

  Legend legend(s, legend_x, kTop + 6);
  for (std::size_t i = 0; i < g.plugins.size(); ++i) legend.series(colour(i), Legend::cut(g.plugins[i], kLabelChars));
  if (any_failed) {
    legend.gap();
    legend.cross("#333333", Legend::cut("out of memory / error", kLabelChars));
  }
  const std::string kind = distinct(points, [](const BenchPoint& p) { return p.peak_memory_kind; });
  if (!kind.empty()) {
    legend.gap();
    legend.note("memory: " + shorten(kind, kNoteChars));
  }
  s += "</svg>\n";
  return s;
}

// --- the paper's Figure 3: accuracy, speed and memory ------------------------

constexpr double kBubbleWidth = 1000, kBubbleHeight = 540, kBubbleLegend = 260;
constexpr double kMaxRadius = 32, kMinRadius = 3;
constexpr double kCharWidth = 6.5;  // px, about, at font-size 11

struct Bubble {
  std::size_t index;        // the plugin's place in the input order, for its colour
  const BenchPoint* point;  // at the plugin's longest ok length
  double accuracy;
  double radius = 0;
};

// Accuracies in % around the bubbles, within 0..100 unless a value is outside.
Scale accuracy_scale(const std::vector<double>& accuracies) {
  if (accuracies.empty()) return {false, 0, 100};
  const auto [min, max] = std::minmax_element(accuracies.begin(), accuracies.end());
  Scale y{false, *min - 5, *max + 5};
  if (*min >= 0) y.lo = std::max(y.lo, 0.0);
  if (*max <= 100) y.hi = std::min(y.hi, 100.0);
  return y;
}

std::string accuracy_svg(const std::vector<BenchPoint>& points,
                         const std::map<std::string, double>& accuracy) {
  const Grid g(points);
  std::vector<Bubble> bubbles;
  std::vector<std::string> no_accuracy, no_ok, not_measured;
  for (std::size_t i = 0; i < g.plugins.size(); ++i) {
    const std::string& plugin = g.plugins[i];
    const BenchPoint* longest = nullptr;
    for (int64_t n : g.lengths) {
      const BenchPoint* p = g.at(plugin, n);
      if (p != nullptr && ok(*p) && std::isfinite(p->steps_per_s) && p->steps_per_s > 0) longest = p;
    }
    const auto acc = accuracy.find(plugin);
    if (acc == accuracy.end() || !std::isfinite(acc->second)) {
      no_accuracy.push_back(plugin);
    } else if (longest == nullptr) {
      no_ok.push_back(plugin);
    } else {
      bubbles.push_back({i, longest, acc->second});
    }
  }
  for (const auto& [plugin, value] : accuracy) {
    if (std::find(g.plugins.begin(), g.plugins.end(), plugin) == g.plugins.end()) {
      not_measured.push_back(plugin);
    }
  }

  // Bubble area proportional to peak memory; the largest gets kMaxRadius.
  double max_gb = 0;
  for (const Bubble& b : bubbles) max_gb = std::max(max_gb, memory_gb(*b.point));
  for (Bubble& b : bubbles) {
    const double share = max_gb > 0 ? std::max(memory_gb(*b.point), 0.0) / max_gb : 1;
    b.radius = std::max(kMinRadius, kMaxRadius * std::sqrt(share));
  }
  std::vector<double> speeds, accuracies;
  for (const Bubble& b : bubbles) {
    speeds.push_back(b.point->steps_per_s);
    accuracies.push_back(b.accuracy);
  }
  // Wider margins than the panels': bubbles and their labels need room.
  Scale x = value_scale(speeds, 0.15);
  if (!x.log && !speeds.empty()) {
    // Around the bubbles rather than from zero: the chart compares plugins.
    x = svg::padded_scale(speeds, 0.2, speeds.front() / 2);
    x.lo = std::max(x.lo, 0.0);
  }

  // A plugin's bubble is at its longest ok length; "@2K" marks one shorter than the longest measured.
  const int64_t longest_length = g.lengths.empty() ? 0 : g.lengths.back();
  auto name = [&](const Bubble& b) {
    const bool shorter = b.point->length != longest_length;
    return g.plugins[b.index] + (shorter ? " @" + length_label(b.point->length) : "");
  };
  const bool any_shorter = std::any_of(bubbles.begin(), bubbles.end(),
                                       [&](const Bubble& b) { return b.point->length != longest_length; });
  const std::string kind = distinct(points, [](const BenchPoint& p) { return p.peak_memory_kind; });
  std::vector<std::pair<const char*, const std::vector<std::string>*>> omitted;
  for (const auto& entry : {std::make_pair("not shown, no accuracy:", &no_accuracy),
                            std::make_pair("not shown, no ok measurement:", &no_ok),
                            std::make_pair("not shown, not measured:", &not_measured)}) {
    if (!entry.second->empty()) omitted.push_back(entry);
  }
  double legend_rows = static_cast<double>(bubbles.size()) + 0.5 + 3;
  for (const auto& [heading, plugins] : omitted) legend_rows += 1.5 + static_cast<double>(plugins->size());
  const double height = std::max(kBubbleHeight, std::ceil(kTop + 6 + legend_rows * Legend::kRow));
  const double right = kBubbleWidth - kBubbleLegend;
  const Panel p{{kLeft + 10, kTop, right, height - kBottom}, x, accuracy_scale(accuracies)};

  std::string s;
  open_page(s, kBubbleWidth, height, "LRA accuracy, speed and memory", points);
  draw_axes(
      s, p, x.ticks(), p.y.ticks(),
      x.log ? "training steps/s at the longest length (log scale)" : "training steps/s at the longest length",
      "average LRA accuracy (%)", "");
  if (bubbles.empty()) no_data_note(s, p, "no plugin with both an accuracy and a measurement");

  std::vector<const Bubble*> by_size;
  for (const Bubble& b : bubbles) by_size.push_back(&b);
  // Largest first, so that small bubbles stay visible on top.
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](const Bubble* a, const Bubble* b) { return a->radius > b->radius; });
  for (const Bubble* b : by_size) {
    const std::string c = colour(b->index);
    s += svg::circle(p.px(b->point->steps_per_s), p.py(b->accuracy), b->radius, c,
                " class=\"bubble\" fill-opacity=\"0.45\" stroke=\"" + c + "\" stroke-width=\"1.5\"",
                name(*b) + ": " + kSpeed.text(b->point->steps_per_s) + " steps/s at " +
                    length_label(b->point->length) + ", accuracy " + svg::fixed(b->accuracy, 2) + "%, " +
                    kMemory.text(memory_gb(*b->point)));
  }
  // Labels after all bubbles, so that none is covered; up and right of the
  // bubble, or left where the label would run past the plot (its width
  // estimated from the characters).
  for (const Bubble& b : bubbles) {
    const double cx = p.px(b.point->steps_per_s), cy = p.py(b.accuracy), offset = b.radius * 0.7 + 4;
    const std::string label = shorten(name(b), kLabelChars);
    const bool left = cx + offset + svg::text_width(label, kCharWidth) > p.right;
    s += "<text x=\"" + svg::coord(left ? cx - offset : cx + offset) + "\" y=\"" +
         svg::coord(cy - offset + 2) + "\"" + (left ? " text-anchor=\"end\"" : "") + " font-size=\"11\">" +
         svg::xml_escape(label) + "</text>\n";
  }

  Legend legend(s, p.right + kLegendGap, kTop + 6);
  for (const Bubble& b : bubbles) legend.dot(colour(b.index), Legend::cut(name(b), kLabelChars));
  legend.gap();
  if (!bubbles.empty()) legend.note("area ∝ peak memory, largest " + kMemory.text(max_gb));
  if (!kind.empty()) legend.note("memory: " + shorten(kind, kNoteChars));
  if (any_shorter) legend.note("@: longest ok length, below " + length_label(longest_length));
  for (const auto& [heading, plugins] : omitted) {
    legend.gap();
    legend.note(heading);
    for (const std::string& plugin : *plugins) legend.note("  " + shorten(plugin, kNoteChars));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace

std::string bench_svg(const std::vector<BenchPoint>& points, const std::map<std::string, double>& accuracy) {
  return accuracy.empty() ? length_svg(points) : accuracy_svg(points, accuracy);
}

}  // namespace lra::host::bench

