#include "plot/chart.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>

namespace lra::host::svg {

namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                                    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
                                    "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"};
static_assert(std::size(kPalette) == kPaletteSize);

}  // namespace

std::string palette_colour(std::size_t i, std::size_t colours) {
  return kPalette[i % std::min(std::max<std::size_t>(colours, 1), kPaletteSize)];
}

std::size_t characters(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

double text_width(std::string_view text, double char_width) {
  return char_width * static_cast<double>(characters(text));
}

// --- scales and ticks -------------------------------------------------------

std::vector<Tick> log_ticks(double lo, double hi) {
  const int e0 = static_cast<int>(std::floor(lo)), e1 = static_cast<int>(std::ceil(hi));
  auto collect = [&](std::initializer_list<double> mantissas, int stride) {
    std::vector<Tick> out;
    for (int e = e0; e <= e1; ++e) {
      if (e % stride != 0) continue;
      for (double m : mantissas) {
        const double v = m * std::pow(10.0, e);
        const double at = std::log10(v);
        if (at >= lo - 1e-9 && at <= hi + 1e-9) out.push_back({v, fixed(v, std::max(0, -e))});
      }
    }
    return out;
  };
  std::vector<Tick> out = collect({1, 2, 5}, 1);
  for (int stride = 1; out.size() > 10; ++stride) out = collect({1}, stride);
  return out;
}

std::vector<Tick> log2_ticks(double lo, double hi) {
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

double Scale::fraction(double v) const {
  const double t = log ? (v > 0 ? std::log10(v) : lo) : v;
  const double f = (t - lo) / (hi - lo);
  return std::isfinite(f) ? std::clamp(f, 0.0, 1.0) : 0.0;
}

std::vector<Tick> Scale::ticks() const { return log ? log_ticks(lo, hi) : linear_ticks(lo, hi); }

Scale value_scale(const std::vector<double>& values, double pad) {
  if (values.empty()) return {};
  const auto [min, max] = std::minmax_element(values.begin(), values.end());
  if (*max > 10 * *min) {
    const double lo = std::log10(*min), hi = std::log10(*max), margin = pad * (hi - lo);
    return {true, lo - margin, hi + margin};
  }
  return {false, 0, *max * (1 + pad)};
}

Scale padded_scale(const std::vector<double>& values, double pad, double single) {
  if (values.empty()) return {};
  const auto [min, max] = std::minmax_element(values.begin(), values.end());
  const double margin = *max > *min ? pad * (*max - *min) : single;
  return {false, *min - margin, *max + margin};
}

// --- the page and the axes --------------------------------------------------

void open_svg(std::string& s, double width, double height, const std::string& title) {
  const std::string w = coord(width), h = coord(height);
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + w + "\" height=\"" + h +
       "\" viewBox=\"0 0 " + w + " " + h +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<title>" + xml_escape(title) + "</title>\n";
  s += "<rect width=\"" + w + "\" height=\"" + h + "\" fill=\"#ffffff\"/>\n";
}

void page_heading(std::string& s, double width, const std::string& title, const std::string& subtitle) {
  s += "<text x=\"" + coord(width / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">" +
       xml_escape(title) + "</text>\n";
  if (!subtitle.empty()) {
    s += "<text x=\"" + coord(width / 2) + "\" y=\"44\" text-anchor=\"middle\" fill=\"#555555\">" +
         xml_escape(subtitle) + "</text>\n";
  }
}

void draw_grid(std::string& s, const Frame& f, const std::vector<Tick>& x_ticks,
               const std::function<double(double)>& px, const std::vector<Tick>& y_ticks,
               const std::function<double(double)>& py) {
  s += "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (const Tick& t : x_ticks) {
    const std::string x = coord(px(t.value));
    s += "<line x1=\"" + x + "\" y1=\"" + coord(f.top) + "\" x2=\"" + x + "\" y2=\"" + coord(f.bottom) +
         "\"/>\n";
  }
  for (const Tick& t : y_ticks) {
    const std::string y = coord(py(t.value));
    s += "<line x1=\"" + coord(f.left) + "\" y1=\"" + y + "\" x2=\"" + coord(f.right) + "\" y2=\"" + y +
         "\"/>\n";
  }
  s += "</g>\n<rect x=\"" + coord(f.left) + "\" y=\"" + coord(f.top) + "\" width=\"" +
       coord(f.right - f.left) + "\" height=\"" + coord(f.bottom - f.top) +
       "\" fill=\"none\" stroke=\"#333333\"/>\n";
  s += "<g font-size=\"11\" fill=\"#333333\" text-anchor=\"middle\">\n";
  for (const Tick& t : x_ticks) {
    s += "<text x=\"" + coord(px(t.value)) + "\" y=\"" + coord(f.bottom + 16) + "\">" + t.label +
         "</text>\n";
  }
  s += "</g>\n<g font-size=\"11\" fill=\"#333333\" text-anchor=\"end\">\n";
  for (const Tick& t : y_ticks) {
    s += "<text x=\"" + coord(f.left - 6) + "\" y=\"" + coord(py(t.value) + 4) + "\">" + t.label +
         "</text>\n";
  }
  s += "</g>\n";
}

void draw_grid(std::string& s, const Panel& p, const std::vector<Tick>& x_ticks, const std::vector<Tick>& y_ticks) {
  draw_grid(
      s, p, x_ticks, [&](double v) { return p.px(v); }, y_ticks, [&](double v) { return p.py(v); });
}

void axis_labels(std::string& s, const Frame& f, const std::string& x_label, const std::string& y_label,
                 double y_gap) {
  const double cx = (f.left + f.right) / 2, cy = (f.top + f.bottom) / 2;
  s += "<text x=\"" + coord(cx) + "\" y=\"" + coord(f.bottom + 42) + "\" text-anchor=\"middle\">" + x_label +
       "</text>\n";
  s += "<text transform=\"translate(" + coord(f.left - y_gap) + " " + coord(cy) +
       ") rotate(-90)\" text-anchor=\"middle\">" + y_label + "</text>\n";
}

void panel_title(std::string& s, const Frame& f, const std::string& title) {
  if (title.empty()) return;
  s += "<text x=\"" + coord((f.left + f.right) / 2) + "\" y=\"" + coord(f.top - 12) +
       "\" text-anchor=\"middle\" font-size=\"14\">" + title + "</text>\n";
}

void no_data_note(std::string& s, const Frame& f, const char* text) {
  s += "<text x=\"" + coord((f.left + f.right) / 2) + "\" y=\"" + coord((f.top + f.bottom) / 2) +
       "\" text-anchor=\"middle\" fill=\"#777777\">" + text + "</text>\n";
}

// --- marks ------------------------------------------------------------------

std::string circle(double x, double y, double r, const std::string& fill, const std::string& extra,
                   const std::string& tooltip) {
  return "<circle cx=\"" + coord(x) + "\" cy=\"" + coord(y) + "\" r=\"" + coord(r) + "\" fill=\"" + fill +
         "\"" + extra + "><title>" + xml_escape(tooltip) + "</title></circle>\n";
}

std::string failure_mark(double x, double y, double r, const std::string& colour, const std::string& tooltip) {
  return "<g class=\"failed\"><title>" + xml_escape(tooltip) + "</title><path d=\"" + cross_path(x, y, r) +
         "\" stroke=\"" + colour + "\" stroke-width=\"2\" fill=\"none\"/></g>\n";
}

// --- the legend -------------------------------------------------------------

Legend::Text Legend::cut(const std::string& full, std::size_t max_chars) { return {shorten(full, max_chars), full}; }

void Legend::line(const std::string& colour, const Text& text, const char* dash) {
  s_ += "<line x1=\"" + coord(x_) + "\" y1=\"" + coord(y_) + "\" x2=\"" + coord(x_ + 24) + "\" y2=\"" +
        coord(y_) + "\" stroke=\"" + colour + "\" stroke-width=\"2\"" +
        (dash != nullptr ? std::string(" stroke-dasharray=\"") + dash + "\"" : "") + "/>\n";
  label(text);
}

void Legend::series(const std::string& colour, const Text& text) {
  s_ += "<line x1=\"" + coord(x_) + "\" y1=\"" + coord(y_) + "\" x2=\"" + coord(x_ + 24) + "\" y2=\"" +
        coord(y_) + "\" stroke=\"" + colour + "\" stroke-width=\"2\"/>\n";
  s_ += circle(x_ + 12, y_, 3, colour, "", text.tooltip.value_or(text.shown));
  label(text);
}

void Legend::dot(const std::string& colour, const Text& text) {
  s_ += circle(x_ + 12, y_, 5, colour, " fill-opacity=\"0.5\" stroke=\"" + colour + "\"",
               text.tooltip.value_or(text.shown));
  label(text);
}

void Legend::area(const std::string& colour, const Text& text) {
  s_ += "<rect x=\"" + coord(x_) + "\" y=\"" + coord(y_ - 6) + "\" width=\"24\" height=\"12\" fill=\"" +
        colour + "\" fill-opacity=\"0.25\"/>\n";
  label(text);
}

void Legend::cross(const std::string& colour, const Text& text) {
  s_ += "<path d=\"" + cross_path(x_ + 12, y_, 5) + "\" stroke=\"" + colour +
        "\" stroke-width=\"2\" fill=\"none\"/>\n";
  label(text);
}

void Legend::note(const std::string& text, double indent) {
  s_ += "<text x=\"" + coord(x_ + indent) + "\" y=\"" + coord(y_ + 4) + "\" fill=\"#555555\" font-size=\"11\">" +
        xml_escape(text) + "</text>\n";
  y_ += kRow;
}

void Legend::label(const Text& text) {
  s_ += "<text x=\"" + coord(x_ + kTextIndent) + "\" y=\"" + coord(y_ + 4) + "\">" +
        (text.tooltip ? "<title>" + xml_escape(*text.tooltip) + "</title>" : "") + xml_escape(text.shown) +
        "</text>\n";
  y_ += kRow;
}

}  // namespace lra::host::svg
