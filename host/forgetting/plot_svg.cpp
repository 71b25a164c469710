#include "forgetting/plot_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

#include "lra/status.h"
#include "plot/svg_text.h"

namespace lra::host::forgetting {
namespace {

using svg::coord;
using svg::cross_path;
using svg::fixed;
using svg::linear_ticks;
using svg::shorten;
using svg::Tick;
using svg::xml_escape;

constexpr const char* kCopyColour = "#ff7f0e";
constexpr const char* kLmColour = "#1f77b4";
constexpr const char* kGreen = "#2ca02c";
constexpr const char* kRed = "#d62728";
constexpr const char* kTab10[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Page layout in pixels: the plot area, then a legend column on the right.
constexpr double kLeft = 70, kTop = 40, kBottom = 60, kLegendWidth = 250;
constexpr double kLegendRow = 18;
constexpr int kMinWidth = 500, kMinHeight = 250;

std::string length_text(const MemoryLength& m) {
  return (m.censored ? "> " : "") + std::to_string(m.value);
}

// Powers of two inside [10^lo, 10^hi], every k-th one so that at most 10
// remain; a range holding fewer than three gets round linear values instead.
std::vector<Tick> log_ticks(double lo, double hi) {
  const double log2 = std::log10(2.0);
  const long k0 = static_cast<long>(std::ceil(lo / log2 - 1e-9));
  const long k1 = static_cast<long>(std::floor(hi / log2 + 1e-9));
  auto first_multiple = [&](long stride) {
    return static_cast<long>(std::ceil(static_cast<double>(k0) / static_cast<double>(stride)));
  };
  auto last_multiple = [&](long stride) {
    return static_cast<long>(std::floor(static_cast<double>(k1) / static_cast<double>(stride)));
  };
  long stride = 1;
  while (last_multiple(stride) - first_multiple(stride) + 1 > 10) ++stride;
  std::vector<Tick> out;
  for (long j = first_multiple(stride); j <= last_multiple(stride); ++j) {
    const long k = j * stride;
    const double v = std::pow(2.0, static_cast<double>(k));
    out.push_back({v, fixed(v, static_cast<int>(std::max(0L, -k)))});
  }
  if (out.size() < 3) return linear_ticks(std::pow(10.0, lo), std::pow(10.0, hi));
  return out;
}

// The plot area and its scales: lengths on x (linear or log10), accuracy 0..1 on y.
class Axes {
 public:
  Axes(double left_px, double top_px, double right_px, double bottom_px, bool log_x,
       const std::vector<double>& lengths)
      : left(left_px), top(top_px), right(right_px), bottom(bottom_px), log_x_(log_x) {
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
    x_ticks = log_x ? log_ticks(lo_, hi_) : linear_ticks(lo_, hi_);
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

  const double left, top, right, bottom;
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

void open_svg(std::string& s, int width, int height, const std::string& title) {
  const std::string w = std::to_string(width), h = std::to_string(height);
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + w + "\" height=\"" + h +
       "\" viewBox=\"0 0 " + w + " " + h +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<title>" + xml_escape(title) + "</title>\n";
  s += "<rect width=\"" + w + "\" height=\"" + h + "\" fill=\"#ffffff\"/>\n";
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
  s += "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (const Tick& t : a.x_ticks) {
    const std::string x = coord(a.x(t.value));
    s += "<line x1=\"" + x + "\" y1=\"" + coord(a.top) + "\" x2=\"" + x + "\" y2=\"" +
         coord(a.bottom) + "\"/>\n";
  }
  for (const Tick& t : a.y_ticks) {
    const std::string y = coord(a.y(t.value));
    s += "<line x1=\"" + coord(a.left) + "\" y1=\"" + y + "\" x2=\"" + coord(a.right) + "\" y2=\"" +
         y + "\"/>\n";
  }
  s += "</g>\n<rect x=\"" + coord(a.left) + "\" y=\"" + coord(a.top) + "\" width=\"" +
       coord(a.right - a.left) + "\" height=\"" + coord(a.bottom - a.top) +
       "\" fill=\"none\" stroke=\"#333333\"/>\n";
  s += "<g font-size=\"11\" fill=\"#333333\" text-anchor=\"middle\">\n";
  for (const Tick& t : a.x_ticks) {
    s += "<text x=\"" + coord(a.x(t.value)) + "\" y=\"" + coord(a.bottom + 16) + "\">" + t.label +
         "</text>\n";
  }
  s += "</g>\n<g font-size=\"11\" fill=\"#333333\" text-anchor=\"end\">\n";
  for (const Tick& t : a.y_ticks) {
    s += "<text x=\"" + coord(a.left - 6) + "\" y=\"" + coord(a.y(t.value) + 4) + "\">" + t.label +
         "</text>\n";
  }
  s += "</g>\n";
  const double cx = (a.left + a.right) / 2, cy = (a.top + a.bottom) / 2;
  s += "<text x=\"" + coord(cx) + "\" y=\"" + coord(a.bottom + 42) + "\" text-anchor=\"middle\">" +
       (log_x ? "Sequence length (log scale)" : "Sequence length") + "</text>\n";
  s += "<text transform=\"translate(" + coord(a.left - 50) + " " + coord(cy) +
       ") rotate(-90)\" text-anchor=\"middle\">Accuracy</text>\n";
  s += "<text x=\"" + coord(cx) + "\" y=\"26\" text-anchor=\"middle\" font-size=\"16\">" +
       xml_escape(title) + "</text>\n";
}

void no_data_note(std::string& s, const Axes& a, const char* text) {
  s += "<text x=\"" + coord((a.left + a.right) / 2) + "\" y=\"" + coord((a.top + a.bottom) / 2) +
       "\" text-anchor=\"middle\" fill=\"#777777\">" + text + "</text>\n";
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
      s += "<circle cx=\"" + coord(a.x(p->length)) + "\" cy=\"" + coord(a.y(mean(*p))) + "\" r=\"" +
           coord(series.marker_radius) + "\" fill=\"" + series.colour + "\"><title>" +
           xml_escape(series.name + ", length " + std::to_string(p->length) + ": " +
                      fixed(mean(*p), 3) + " ± " + fixed(stdev(*p), 3)) +
           "</title></circle>\n";
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
    s += "<g class=\"failed\"><title>" +
         xml_escape(label + "length " + std::to_string(p.length) + " failed: " + p.error) +
         "</title><path d=\"" + cross_path(a.x(p.length), a.bottom, 5) + "\" stroke=\"" + colour +
         "\" stroke-width=\"2\" fill=\"none\"/></g>\n";
  }
}

// Legend rows in the column right of the plot.
class Legend {
 public:
  Legend(std::string& s, double x, double y) : s_(s), x_(x), y_(y) {}

  void line(const std::string& colour, bool dashed, const std::string& text,
            const std::string& tooltip = "") {
    s_ += "<line x1=\"" + coord(x_) + "\" y1=\"" + coord(y_) + "\" x2=\"" + coord(x_ + 24) +
          "\" y2=\"" + coord(y_) + "\" stroke=\"" + colour + "\" stroke-width=\"2\"" +
          (dashed ? " stroke-dasharray=\"6,3\"" : "") + "/>\n";
    label(text, tooltip);
  }
  void area(const std::string& colour, const std::string& text) {
    s_ += "<rect x=\"" + coord(x_) + "\" y=\"" + coord(y_ - 6) + "\" width=\"24\" height=\"12\" fill=\"" +
          colour + "\" fill-opacity=\"0.25\"/>\n";
    label(text, "");
  }
  void cross(const std::string& colour, const std::string& text) {
    s_ += "<path d=\"" + cross_path(x_ + 12, y_, 5) + "\" stroke=\"" + colour +
          "\" stroke-width=\"2\" fill=\"none\"/>\n";
    label(text, "");
  }
  void note(const std::string& text) {
    s_ += "<text x=\"" + coord(x_ + 32) + "\" y=\"" + coord(y_ + 4) + "\" fill=\"#555555\" font-size=\"11\">" +
          xml_escape(text) + "</text>\n";
    y_ += kLegendRow;
  }
  void gap() { y_ += kLegendRow / 2; }

 private:
  void label(const std::string& text, const std::string& tooltip) {
    s_ += "<text x=\"" + coord(x_ + 32) + "\" y=\"" + coord(y_ + 4) + "\">" +
          (tooltip.empty() ? "" : "<title>" + xml_escape(tooltip) + "</title>") + xml_escape(text) +
          "</text>\n";
    y_ += kLegendRow;
  }

  std::string& s_;
  double x_, y_;
};

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
  open_svg(s, options.width, options.height, title);

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
  if (!any_ok(curve.points)) no_data_note(s, a, "no completed lengths");
  draw_series(s, a, curve.points, {false, kLmColour, false, true, 3, "LM accuracy"});
  draw_series(s, a, curve.points, {true, kCopyColour, false, true, 3, "copy accuracy"});
  draw_failed(s, a, curve.points, kRed, "");

  Legend legend(s, a.right + 20, a.top + 6);
  legend.line(kCopyColour, false, "copy accuracy");
  legend.line(kLmColour, false, "LM accuracy");
  if (curve.train_length > 0) {
    legend.line(kRed, true, "training length = " + std::to_string(curve.train_length));
    legend.line(kGreen, true, "half = " + std::to_string(half));
  }
  const auto n_failed = std::count_if(curve.points.begin(), curve.points.end(),
                                      [](const CurvePoint& p) { return !p.ok(); });
  if (n_failed > 0) {
    legend.cross(kRed, "failed: " + std::to_string(n_failed) + (n_failed == 1 ? " length" : " lengths"));
  }
  legend.gap();
  legend.area(kGreen, "fine-grained: " + length_text(curve.fine));
  legend.area(kLmColour, "coarse-grained: " + length_text(curve.coarse));
  legend.area(kRed, "amnesia");
  legend.note("prefix rule: fine " + length_text(curve.fine_prefix));
  legend.note("prefix rule: coarse " + length_text(curve.coarse_prefix));
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
  const double legend_height = legend_rows * kLegendRow;
  const int height = std::max(options.height, static_cast<int>(std::ceil(a.top + 6 + legend_height)));

  std::string s;
  open_svg(s, options.width, height, title);
  draw_axes(s, a, options.log_x, title);
  const bool no_data = std::none_of(curves.begin(), curves.end(),
                                    [](const Curve& c) { return any_ok(c.points); });
  if (no_data) no_data_note(s, a, curves.empty() ? "no curves" : "no completed lengths");

  Legend legend(s, a.right + 20, a.top + 6);
  // Legend text is cut to fit the column; the full label stays in the tooltip.
  constexpr std::size_t kLabelChars = 22;
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const Curve& c = curves[i];
    const std::string colour = kTab10[i % std::size(kTab10)];
    if (c.train_length > 0) {
      vertical_line(s, a, static_cast<double>(c.train_length), colour, "2,4",
                    c.label + ": training length = " + std::to_string(c.train_length));
    }
    draw_series(s, a, c.points, {false, colour, true, false, 2.5, c.label + " LM"});
    draw_series(s, a, c.points, {true, colour, false, false, 2.5, c.label + " copy"});
    draw_failed(s, a, c.points, colour, c.label + ": ");

    const std::string shown = shorten(c.label, kLabelChars);
    legend.line(colour, false, shown + " copy", c.label + " copy");
    legend.line(colour, true, shown + " LM", c.label + " LM");
    legend.note("fine " + length_text(c.fine) + ", coarse " + length_text(c.coarse));
    if (has_extra_row(c)) {
      std::string extra = c.train_length > 0 ? "training length " + std::to_string(c.train_length) : "";
      if (!c.complete) extra += extra.empty() ? "incomplete" : ", incomplete";
      legend.note(extra);
    }
    legend.gap();
  }
  s += "</svg>\n";
  return s;
}

}  // namespace lra::host::forgetting
