#include "forgetting/plot_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

#include "forgetting/memory_length.h"
#include "lra/status.h"
#include "plot/chart.h"

namespace lra::host::forgetting {
namespace {

using svg::coord;
using svg::fixed;
using svg::Legend;
using svg::linear_ticks;
using svg::Tick;
using svg::xml_escape;

constexpr const char* kCopyColour = "#ff7f0e";
constexpr const char* kLmColour = "#1f77b4";
constexpr const char* kGreen = "#2ca02c";
constexpr const char* kRed = "#d62728";
constexpr std::size_t kTab10 = 10;  // compare_svg's colours: the palette's first ten
constexpr const char* kLegendDash = "6,3";

// Page layout in pixels: the plot area, then a legend column on the right.
constexpr double kLeft = 70, kTop = 40, kBottom = 60, kLegendWidth = 250;
constexpr int kMinWidth = 500, kMinHeight = 250;

// The plot area and its scales: lengths on x (linear or log10), accuracy 0..1 on y.
class Axes : public svg::Frame {
 public:
  Axes(double left_px, double top_px, double right_px, double bottom_px, bool log_x,
       const std::vector<double>& lengths)
      : Frame{left_px, top_px, right_px, bottom_px}, log_x_(log_x) {
    std::vector<double> xs;
    for (double v : lengths) {
      if (!log_x || v > 0) xs.push_back(log_x ? std::log10(v) : v);
    }
    if (xs.empty()) xs = {log_x ? 0.0 : 1.0, log_x ? 3.0 : 1000.0};  // nothing measured: lengths 1..1000
    lo_ = *std::min_element(xs.begin(), xs.end());
    hi_ = *std::max_element(xs.begin(), xs.end());
    if (hi_ - lo_ > 0) {
      const double pad = 0.03 * (hi_ - lo_);
      lo_ -= pad;
      hi_ += pad;
    } else {
      // One length: a factor of two either side (log) or half of it (linear).
      const double half = log_x ? std::log10(2.0) : std::max(std::fabs(lo_) * 0.5, 1.0);
      lo_ -= half;
      hi_ += half;
    }
    x_ticks = log_x ? svg::log2_ticks(lo_, hi_) : linear_ticks(lo_, hi_);
    y_ticks = linear_ticks(0, 1);
  }

  double x(double length) const {
    double v = length;
    if (log_x_) v = length > 0 ? std::log10(length) : lo_;
    return left + std::clamp((v - lo_) / (hi_ - lo_), 0.0, 1.0) * (right - left);
  }
  double x(int64_t length) const { return x(static_cast<double>(length)); }
  double y(double accuracy) const {
    return bottom - std::clamp(accuracy, 0.0, 1.0) * (bottom - top);
  }

  std::vector<Tick> x_ticks, y_ticks;

 private:
  bool log_x_;
  double lo_ = 0, hi_ = 1;
};

void check_size(const PlotOptions& o) {
  if (o.width < kMinWidth || o.height < kMinHeight) {
    throw lra::Error(lra::ErrorKind::usage,
                     "plot size " + std::to_string(o.width) + "x" + std::to_string(o.height) +
                         " is too small (at least " + std::to_string(kMinWidth) + "x" +
                         std::to_string(kMinHeight) + ")");
  }
}

void vertical_line(std::string& s, const Axes& a, double length, const std::string& colour,
                   const char* dash, const std::string& tooltip) {
  const std::string x = coord(a.x(length));
  s += "<line class=\"train-length\" x1=\"" + x + "\" y1=\"" + coord(a.top) + "\" x2=\"" + x +
       "\" y2=\"" + coord(a.bottom) + "\" stroke=\"" + colour +
       "\" stroke-width=\"1.5\" stroke-dasharray=\"" + dash + "\"><title>" + xml_escape(tooltip) +
       "</title></line>\n";
}

// Gridlines, frame, tick labels, axis labels and the title.
void draw_axes(std::string& s, const Axes& a, bool log_x, const std::string& title) {
  svg::draw_grid(
      s, a, a.x_ticks, [&](double v) { return a.x(v); }, a.y_ticks, [&](double v) { return a.y(v); });
  svg::axis_labels(s, a, log_x ? "Sequence length (log scale)" : "Sequence length", "Accuracy", 50);
  s += "<text x=\"" + coord((a.left + a.right) / 2) + "\" y=\"26\" text-anchor=\"middle\" font-size=\"16\">" +
       xml_escape(title) + "</text>\n";
}

struct Series {
  bool copy;           // copy accuracy, else LM accuracy
  std::string colour;
  bool dashed, band;
  double marker_radius;
  std::string name;    // in the markers' tooltips
};

// Lines, bands and markers of one accuracy series; a failed point breaks the line.
void draw_series(std::string& s, const Axes& a, const std::vector<CurvePoint>& points,
                 const Series& series) {
  const std::string cls = series.copy ? "copy" : "lm";
  auto mean = [&](const CurvePoint& p) { return series.copy ? p.copy_mean : p.lm_mean; };
  auto stdev = [&](const CurvePoint& p) { return series.copy ? p.copy_std : p.lm_std; };
  auto xy = [&](const CurvePoint& p, double acc) { return coord(a.x(p.length)) + "," + coord(a.y(acc)); };

  auto flush = [&](std::vector<const CurvePoint*>& run) {
    if (series.band && run.size() >= 2) {
      std::string pts;
      for (const CurvePoint* p : run) pts += xy(*p, mean(*p) + stdev(*p)) + " ";
      for (auto it = run.rbegin(); it != run.rend(); ++it) pts += xy(**it, mean(**it) - stdev(**it)) + " ";
      pts.pop_back();
      s += "<polygon class=\"" + cls + "-band\" points=\"" + pts + "\" fill=\"" + series.colour +
           "\" fill-opacity=\"0.1\" stroke=\"none\"/>\n";
    }
    if (run.size() >= 2) {
      std::string pts;
      for (const CurvePoint* p : run) pts += xy(*p, mean(*p)) + " ";
      pts.pop_back();
      s += "<polyline class=\"" + cls + "-line\" points=\"" + pts + "\" fill=\"none\" stroke=\"" +
           series.colour + "\" stroke-width=\"2\"" +
           (series.dashed ? " stroke-dasharray=\"7,4\"" : "") + "/>\n";
    }
    for (const CurvePoint* p : run) {
      s += svg::circle(a.x(p->length), a.y(mean(*p)), series.marker_radius, series.colour, "",
                  series.name + ", length " + std::to_string(p->length) + ": " + fixed(mean(*p), 3) + " ± " +
                      fixed(stdev(*p), 3));
    }
    run.clear();
  };

  std::vector<const CurvePoint*> run;
  for (const CurvePoint& p : points) {
    if (p.ok()) {
      run.push_back(&p);
    } else {
      flush(run);
    }
  }
  flush(run);
}

// Failed lengths: a cross on the x axis, the reason in its tooltip.
void draw_failed(std::string& s, const Axes& a, const std::vector<CurvePoint>& points,
                 const std::string& colour, const std::string& label) {
  for (const CurvePoint& p : points) {
    if (p.ok()) continue;
    s += svg::failure_mark(a.x(p.length), a.bottom, 5, colour,
                      label + "length " + std::to_string(p.length) + " failed: " + p.error);
  }
}

void region(std::string& s, const Axes& a, double from, double to, const char* colour,
            const char* cls, const char* name) {
  const double x0 = a.x(from), x1 = a.x(to);
  if (x1 - x0 <= 0) return;
  s += "<rect class=\"" + std::string(cls) + "\" x=\"" + coord(x0) + "\" y=\"" + coord(a.top) +
       "\" width=\"" + coord(x1 - x0) + "\" height=\"" + coord(a.bottom - a.top) + "\" fill=\"" +
       colour + "\" fill-opacity=\"0.08\"><title>" + name + "</title></rect>\n";
}

bool any_ok(const std::vector<CurvePoint>& points) {
  return std::any_of(points.begin(), points.end(), [](const CurvePoint& p) { return p.ok(); });
}

}  // namespace

std::string forgetting_svg(const Curve& curve, const PlotOptions& options) {
  check_size(options);
  const std::string title = options.title.empty() ? curve.label : options.title;
  std::vector<double> lengths;
  for (const CurvePoint& p : curve.points) lengths.push_back(static_cast<double>(p.length));
  const int64_t half = curve.train_length / 2;  // integer halving, as the reference tool
  if (curve.train_length > 0) {
    lengths.push_back(static_cast<double>(curve.train_length));
    lengths.push_back(static_cast<double>(half));
  }
  const Axes a(kLeft, kTop, options.width - kLegendWidth, options.height - kBottom, options.log_x,
               lengths);

  std::string s;
  svg::open_svg(s, options.width, options.height, title);

  // Phases, over the points up to the first failure (beyond it nothing is known).
  const auto failed = std::find_if(curve.points.begin(), curve.points.end(),
                                   [](const CurvePoint& p) { return !p.ok(); });
  if (failed != curve.points.begin()) {
    const double first = static_cast<double>(curve.points.front().length);
    const double last = static_cast<double>(std::prev(failed)->length);
    // The headline lengths may lie beyond a failure: shade only what is known.
    const double fine_end = std::clamp(static_cast<double>(curve.fine.value), first, last);
    const double coarse_end = std::clamp(static_cast<double>(curve.coarse.value), fine_end, last);
    region(s, a, first, fine_end, kGreen, "region-fine", "fine-grained memory");
    region(s, a, fine_end, coarse_end, kLmColour, "region-coarse", "coarse-grained memory");
    region(s, a, coarse_end, last, kRed, "region-amnesia", "amnesia");
  }

  draw_axes(s, a, options.log_x, title);
  if (curve.train_length > 0) {
    const std::string n = std::to_string(curve.train_length), h = std::to_string(half);
    vertical_line(s, a, static_cast<double>(curve.train_length), kRed, "6,4", "training length = " + n);
    vertical_line(s, a, static_cast<double>(half), kGreen, "6,4", "half = " + h);
  }
  if (!any_ok(curve.points)) svg::no_data_note(s, a, "no completed lengths");
  draw_series(s, a, curve.points, {false, kLmColour, false, true, 3, "LM accuracy"});
  draw_series(s, a, curve.points, {true, kCopyColour, false, true, 3, "copy accuracy"});
  draw_failed(s, a, curve.points, kRed, "");

  Legend legend(s, a.right + 20, a.top + 6);
  legend.line(kCopyColour, "copy accuracy");
  legend.line(kLmColour, "LM accuracy");
  if (curve.train_length > 0) {
    legend.line(kRed, "training length = " + std::to_string(curve.train_length), kLegendDash);
    legend.line(kGreen, "half = " + std::to_string(half), kLegendDash);
  }
  const auto n_failed = std::count_if(curve.points.begin(), curve.points.end(),
                                      [](const CurvePoint& p) { return !p.ok(); });
  if (n_failed > 0) {
    legend.cross(kRed, "failed: " + std::to_string(n_failed) + (n_failed == 1 ? " length" : " lengths"));
  }
  legend.gap();
  legend.area(kGreen, "fine-grained: " + marked_length(curve, curve.fine));
  legend.area(kLmColour, "coarse-grained: " + marked_length(curve, curve.coarse));
  legend.area(kRed, "amnesia");
  legend.note("prefix rule: fine " + marked_length(curve, curve.fine_prefix), Legend::kTextIndent);
  legend.note("prefix rule: coarse " + marked_length(curve, curve.coarse_prefix), Legend::kTextIndent);
  s += "</svg>\n";
  return s;
}

std::string compare_svg(const std::vector<Curve>& curves, const PlotOptions& options) {
  check_size(options);
  const std::string title = options.title.empty() ? "Forgetting curves" : options.title;
  std::vector<double> lengths;
  for (const Curve& c : curves) {
    for (const CurvePoint& p : c.points) lengths.push_back(static_cast<double>(p.length));
    if (c.train_length > 0) lengths.push_back(static_cast<double>(c.train_length));
  }
  const Axes a(kLeft, kTop, options.width - kLegendWidth, options.height - kBottom, options.log_x,
               lengths);
  // Legend rows per curve: copy, LM, lengths, training length and/or
  // "incomplete" when there are any, half a row of gap. A long list makes the
  // page taller.
  auto has_extra_row = [](const Curve& c) { return c.train_length > 0 || !c.complete; };
  double legend_rows = 0;
  for (const Curve& c : curves) legend_rows += has_extra_row(c) ? 4.5 : 3.5;
  const double legend_height = legend_rows * Legend::kRow;
  const int height = std::max(options.height, static_cast<int>(std::ceil(a.top + 6 + legend_height)));

  std::string s;
  svg::open_svg(s, options.width, height, title);
  draw_axes(s, a, options.log_x, title);
  const bool no_data = std::none_of(curves.begin(), curves.end(),
                                    [](const Curve& c) { return any_ok(c.points); });
  if (no_data) svg::no_data_note(s, a, curves.empty() ? "no curves" : "no completed lengths");

  Legend legend(s, a.right + 20, a.top + 6);
  // Legend text is cut to fit the column; the full label stays in the tooltip.
  constexpr std::size_t kLabelChars = 22;
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const Curve& c = curves[i];
    const std::string colour = svg::palette_colour(i, kTab10);
    if (c.train_length > 0) {
      vertical_line(s, a, static_cast<double>(c.train_length), colour, "2,4",
                    c.label + ": training length = " + std::to_string(c.train_length));
    }
    draw_series(s, a, c.points, {false, colour, true, false, 2.5, c.label + " LM"});
    draw_series(s, a, c.points, {true, colour, false, false, 2.5, c.label + " copy"});
    draw_failed(s, a, c.points, colour, c.label + ": ");

    const std::string shown = svg::shorten(c.label, kLabelChars);
    legend.line(colour, {shown + " copy", c.label + " copy"});
    legend.line(colour, {shown + " LM", c.label + " LM"}, kLegendDash);
    legend.note("fine " + marked_length(c, c.fine) + ", coarse " + marked_length(c, c.coarse), Legend::kTextIndent);
    if (has_extra_row(c)) {
      std::string extra = c.train_length > 0 ? "training length " + std::to_string(c.train_length) : "";
      if (!c.complete) extra += extra.empty() ? "incomplete" : ", incomplete";
      legend.note(extra, Legend::kTextIndent);
    }
    legend.gap();
  }
  s += "</svg>\n";
  return s;
}

}  // namespace lra::host::forgetting
