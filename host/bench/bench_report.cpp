#include "bench/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "common/json_reader.h"
#include "common/text.h"
#include "lra/status.h"
#include "plot/svg_text.h"

namespace lra::host::bench {
namespace {

using svg::coord;
using svg::cross_path;
using svg::fixed;
using svg::linear_ticks;
using svg::shorten;
using svg::Tick;
using svg::xml_escape;

using nlohmann::json;

// Speed-ups and memory ratios are against this plugin, as in the paper's Table 2.
constexpr const char* kReference = "transformer";
// The paper's GB: 10^9 bytes.
constexpr double kBytesPerGB = 1e9;

bool ok(const BenchPoint& p) { return p.status == "ok"; }

// --- reading bench.json -----------------------------------------------------

// bench.json's checks (common/json_reader.h); every message is
// "<source>: <field>: <what>", the field being "<at>.<key>".
std::string field(const std::string& at, const char* key) { return at + "." + key; }

std::string string_at(const JsonReader& r, const json& object, const std::string& at, const char* key) {
  return r.string(r.require(object, key, field(at, key)), field(at, key));
}

// A non-negative integer.
int64_t count_at(const JsonReader& r, const json& object, const std::string& at, const char* key) {
  const auto n = r.integer(r.require(object, key, field(at, key)), field(at, key));
  if (n < 0) r.fail(field(at, key), std::to_string(n) + " is negative");
  return n;
}

// A finite, non-negative number.
double number_at(const JsonReader& r, const json& object, const std::string& at, const char* key) {
  return r.non_negative(r.require(object, key, field(at, key)), field(at, key), true);
}

// Present, and null when unknown.
std::optional<double> nullable_at(const JsonReader& r, const json& object, const std::string& at, const char* key) {
  const json& v = r.require(object, key, field(at, key));
  if (v.is_null()) return std::nullopt;
  return r.non_negative(v, field(at, key), true);
}

std::vector<double> numbers_at(const JsonReader& r, const json& object, const std::string& at, const char* key) {
  const json& v = r.require(object, key, field(at, key));
  if (!v.is_array()) r.fail(field(at, key), "expected an array, got " + r.shown(v));
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.push_back(r.non_negative(v[i], field(at, key) + "[" + std::to_string(i) + "]", true));
  }
  return out;
}

BenchPoint point_from_json(const JsonReader& r, const json& v, const std::string& at) {
  if (!v.is_object()) r.fail(at, "expected an object, got " + r.shown(v));
  BenchPoint p;
  p.plugin = string_at(r, v, at, "plugin");
  if (p.plugin.empty()) r.fail(at + ".plugin", "empty");
  p.length = count_at(r, v, at, "length");
  if (p.length == 0) r.fail(at + ".length", "0 is not positive");
  p.batch = count_at(r, v, at, "batch");
  if (p.batch == 0) r.fail(at + ".batch", "0 is not positive");
  p.device = string_at(r, v, at, "device");
  p.dtype = string_at(r, v, at, "dtype");
  p.status = string_at(r, v, at, "status");
  if (p.status != "ok" && p.status != "oom" && p.status != "error") {
    r.fail(at + ".status", "expected \"ok\", \"oom\" or \"error\", got " + r.shown(json(p.status)));
  }
  if (ok(p)) {
    if (v.contains("error")) r.fail(at + ".error", "present, but status is \"ok\"");
  } else {
    p.error = string_at(r, v, at, "error");
    if (p.error.empty()) r.fail(at + ".error", "empty (a failed point needs a reason)");
  }
  p.steps_per_s = number_at(r, v, at, "steps_per_s");
  // Speed-ups divide by it.
  if (ok(p) && p.steps_per_s == 0) r.fail(at + ".steps_per_s", "0 is not positive for an ok point");
  p.repetition_steps_per_s = numbers_at(r, v, at, "repetition_steps_per_s");
  p.tokens_per_s = number_at(r, v, at, "tokens_per_s");
  p.peak_memory_bytes = count_at(r, v, at, "peak_memory_bytes");
  p.peak_memory_kind = string_at(r, v, at, "peak_memory_kind");
  p.params = count_at(r, v, at, "params");
  p.flops_per_step = nullable_at(r, v, at, "flops_per_step");
  p.mfu = nullable_at(r, v, at, "mfu");
  return p;
}

// --- numbers as text --------------------------------------------------------

// `digits` significant digits in fixed notation: 2 -> "2.00" (3), 0.1206 -> "0.12" (2).
std::string significant(double v, int digits) {
  if (!std::isfinite(v) || v <= 0) return fixed(v, digits - 1);
  int decimals = std::clamp(digits - 1 - static_cast<int>(std::floor(std::log10(v))), 0, 12);
  // Rounding can carry into a new digit (9.96 -> "10.0"): one decimal fewer then.
  if (decimals > 0 && std::round(v * std::pow(10.0, decimals)) >= std::pow(10.0, digits)) --decimals;
  return fixed(v, decimals);
}

// The paper's column names: 1024 -> "1K", 3072 -> "3K"; other lengths as they are.
std::string length_label(int64_t length) {
  return length > 0 && length % 1024 == 0 ? std::to_string(length / 1024) + "K" : std::to_string(length);
}

double memory_gb(const BenchPoint& p) { return static_cast<double>(p.peak_memory_bytes) / kBytesPerGB; }

// A measured quantity: its value and how it is written.
struct Quantity {
  double (*value)(const BenchPoint&);
  std::string (*text)(double);
};
const Quantity kSpeed{[](const BenchPoint& p) { return p.steps_per_s; },
                      [](double v) { return significant(v, 3); }};
const Quantity kMemory{memory_gb, [](double v) { return fixed(v, 2) + " GB"; }};

// "5.00 (2.5x)": the value with `unit` and, when the reference point is
// given and measured a positive value, the ratio to it (`note` follows the "x").
std::string with_ratio(const Quantity& q, const BenchPoint& p, const BenchPoint* reference,
                       const std::string& unit = "", const std::string& note = "") {
  const double v = q.value(p);
  std::string s = q.text(v) + unit;
  if (reference != nullptr) {
    const double r = q.value(*reference);
    if (std::isfinite(r) && r > 0 && std::isfinite(v) && v >= 0) {
      s += " (" + significant(v / r, 2) + "x" + note + ")";
    }
  }
  return s;
}

// --- the points as a table --------------------------------------------------

// Plugins in input order, lengths ascending, and the point of each pair (the
// first where one occurs twice).
class Grid {
 public:
  explicit Grid(const std::vector<BenchPoint>& points) {
    std::set<int64_t> ascending;
    for (const BenchPoint& p : points) {
      if (std::find(plugins.begin(), plugins.end(), p.plugin) == plugins.end()) plugins.push_back(p.plugin);
      ascending.insert(p.length);
      cells_.emplace(std::make_pair(p.plugin, p.length), &p);
    }
    lengths.assign(ascending.begin(), ascending.end());
  }

  const BenchPoint* at(const std::string& plugin, int64_t length) const {
    const auto it = cells_.find({plugin, length});
    return it == cells_.end() ? nullptr : it->second;
  }
  // The reference point at `length` when it is ok, else null.
  const BenchPoint* reference(int64_t length) const {
    const BenchPoint* r = at(kReference, length);
    return r != nullptr && ok(*r) ? r : nullptr;
  }
  bool has_reference() const {
    return std::any_of(lengths.begin(), lengths.end(), [&](int64_t n) { return reference(n) != nullptr; });
  }

  std::vector<std::string> plugins;
  std::vector<int64_t> lengths;

 private:
  std::map<std::pair<std::string, int64_t>, const BenchPoint*> cells_;
};

// The distinct non-empty values of one field, in input order, joined by ", ".
template <class Field>
std::string distinct(const std::vector<BenchPoint>& points, Field field) {
  std::vector<std::string> seen;
  for (const BenchPoint& p : points) {
    const std::string v = field(p);
    if (!v.empty() && std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
  }
  std::string out;
  for (const std::string& v : seen) out += (out.empty() ? "" : ", ") + v;
  return out;
}

std::string batches(const std::vector<BenchPoint>& points) {
  return distinct(points, [](const BenchPoint& p) { return p.batch > 0 ? std::to_string(p.batch) : ""; });
}

// --- Markdown ---------------------------------------------------------------

// Text from the points inside Markdown (common/text.h): backslash escapes,
// as these tables always had.
std::string md_text(std::string_view text) { return text::markdown_cell(text, text::MarkdownEscape::backslashes); }

void md_table(std::string& s, const Grid& g, const Quantity& q) {
  s += "| Model |";
  for (int64_t n : g.lengths) s += " " + length_label(n) + " |";
  s += "\n| :--- |";
  for (std::size_t i = 0; i < g.lengths.size(); ++i) s += " ---: |";
  s += "\n";
  for (const std::string& plugin : g.plugins) {
    s += "| " + md_text(plugin) + " |";
    for (int64_t n : g.lengths) {
      const BenchPoint* p = g.at(plugin, n);
      std::string cell = "-";
      if (p != nullptr) {
        cell = ok(*p) ? with_ratio(q, *p, g.reference(n)) : p->status == "oom" ? "OOM" : "error";
      }
      s += " " + cell + " |";
    }
    s += "\n";
  }
}

}  // namespace

json bench_points_json(const std::vector<BenchPoint>& points) {
  json out = json::array();
  for (const BenchPoint& p : points) {
    json o = {{"plugin", p.plugin},
              {"length", p.length},
              {"batch", p.batch},
              {"device", p.device},
              {"dtype", p.dtype},
              {"status", p.status},
              {"steps_per_s", p.steps_per_s},
              {"repetition_steps_per_s", p.repetition_steps_per_s},
              {"tokens_per_s", p.tokens_per_s},
              {"peak_memory_bytes", p.peak_memory_bytes},
              {"peak_memory_kind", p.peak_memory_kind},
              {"params", p.params},
              {"flops_per_step", p.flops_per_step ? json(*p.flops_per_step) : json(nullptr)},
              {"mfu", p.mfu ? json(*p.mfu) : json(nullptr)}};
    if (!ok(p)) o["error"] = p.error;
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<BenchPoint> bench_points_from_json(const json& doc, const std::string& source) {
  const JsonReader r(source, lra::ErrorKind::usage);
  if (!doc.is_object()) r.fail("", "expected a JSON object, got " + r.shown(doc));
  const json& schema = r.require(doc, "schema", "schema");
  if (!schema.is_string() || schema.get<std::string>() != kBenchSchema) {
    r.fail("schema", "expected \"" + std::string(kBenchSchema) + "\", got " + r.shown(schema));
  }
  const json& results = r.require(doc, "results", "results");
  if (!results.is_array()) r.fail("results", "expected an array, got " + r.shown(results));
  std::vector<BenchPoint> points;
  std::map<std::pair<std::string, int64_t>, std::size_t> first;  // (plugin, length) -> index
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string at = "results[" + std::to_string(i) + "]";
    BenchPoint p = point_from_json(r, results[i], at);
    const auto [it, inserted] = first.emplace(std::make_pair(p.plugin, p.length), i);
    if (!inserted) {
      r.fail(at, "plugin \"" + p.plugin + "\" at length " + std::to_string(p.length) +
                     " already measured in results[" + std::to_string(it->second) + "]");
    }
    points.push_back(std::move(p));
  }
  return points;
}

std::string bench_markdown(const std::vector<BenchPoint>& points) {
  if (points.empty()) return "No benchmark results.\n";
  const Grid g(points);
  const std::string against = g.has_reference() ? std::string(", speed-up against ") + kReference : "";
  const std::string ratio_to = g.has_reference() ? std::string(", ratio to ") + kReference : "";
  std::string s = "### Speed (training steps per second" + against + ")\n\n";
  md_table(s, g, kSpeed);
  s += "\n### Peak memory (GB" + ratio_to + ")\n\n";
  md_table(s, g, kMemory);

  std::string mfu;
  for (const std::string& plugin : g.plugins) {
    std::string per_length;
    for (int64_t n : g.lengths) {
      const BenchPoint* p = g.at(plugin, n);
      if (p == nullptr || !ok(*p) || !p->mfu || !std::isfinite(*p->mfu)) continue;
      per_length += (per_length.empty() ? " " : ", ") + length_label(n) + " " + fixed(*p->mfu * 100, 1) + "%";
    }
    if (!per_length.empty()) mfu += (mfu.empty() ? "" : "; ") + md_text(plugin) + per_length;
  }
  const std::string kind = distinct(points, [](const BenchPoint& p) { return p.peak_memory_kind; });
  s += "\nDevice: " + md_text(distinct(points, [](const BenchPoint& p) { return p.device; })) +
       "; dtype: " + md_text(distinct(points, [](const BenchPoint& p) { return p.dtype; })) +
       "; batch: " + batches(points) + "; peak memory: " + (kind.empty() ? "" : md_text(kind) + ", ") +
       "GB = 10^9 bytes; MFU: " + (mfu.empty() ? "unknown" : mfu) + ".\n";
  return s;
}

// --- SVG --------------------------------------------------------------------

namespace {

// tab10, then tab20's light shades; beyond twenty plugins the colours repeat.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                                    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
                                    "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"};

std::string colour(std::size_t plugin_index) { return kPalette[plugin_index % std::size(kPalette)]; }

constexpr double kLegendRow = 18;
constexpr std::size_t kLabelChars = 24;  // legend and bubble labels; the full text is in the tooltip
constexpr std::size_t kNoteChars = 34;   // notes in the legend column

std::size_t characters(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Ticks at 1, 2 and 5 × 10^e inside [10^lo, 10^hi]; where that gives more
// than 10, powers of ten only (every k-th one on a very wide range).
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

// One axis: value -> fraction of the panel, linear or log10.
struct Scale {
  bool log = false;
  double lo = 0, hi = 1;  // on a log scale, log10 of the bounds

  double fraction(double v) const {
    const double t = log ? (v > 0 ? std::log10(v) : lo) : v;
    const double f = (t - lo) / (hi - lo);
    return std::isfinite(f) ? std::clamp(f, 0.0, 1.0) : 0.0;
  }
  std::vector<Tick> ticks() const { return log ? log_ticks(lo, hi) : linear_ticks(lo, hi); }
};

// Speeds and memories are positive: linear from zero, or log10 when the
// values span more than 10x so the slow or small plugins do not all sit on
// the floor (the axis label then says "log scale"), padded by `pad` of the
// span at both ends.
Scale value_scale(const std::vector<double>& values, double pad) {
  if (values.empty()) return {};
  const auto [min, max] = std::minmax_element(values.begin(), values.end());
  if (*max > 10 * *min) {
    const double lo = std::log10(*min), hi = std::log10(*max), margin = pad * (hi - lo);
    return {true, lo - margin, hi + margin};
  }
  return {false, 0, *max * (1 + pad)};
}

// The plotted range around `values`: padded by `pad` of their span, or by
// `single` either side when they coincide; [0, 1] when there are none.
Scale padded_scale(const std::vector<double>& values, double pad, double single) {
  if (values.empty()) return {};
  const auto [min, max] = std::minmax_element(values.begin(), values.end());
  const double margin = *max > *min ? pad * (*max - *min) : single;
  return {false, *min - margin, *max + margin};
}

struct Panel {
  double left, top, right, bottom;
  Scale x, y;

  double px(double v) const { return left + x.fraction(v) * (right - left); }
  double py(double v) const { return bottom - y.fraction(v) * (bottom - top); }
};

void open_svg(std::string& s, double width, double height, const std::string& title,
              const std::string& subtitle) {
  const std::string w = coord(width), h = coord(height);
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + w + "\" height=\"" + h +
       "\" viewBox=\"0 0 " + w + " " + h +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<title>" + xml_escape(title) + "</title>\n";
  s += "<rect width=\"" + w + "\" height=\"" + h + "\" fill=\"#ffffff\"/>\n";
  s += "<text x=\"" + coord(width / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">" +
       xml_escape(title) + "</text>\n";
  if (!subtitle.empty()) {
    s += "<text x=\"" + coord(width / 2) + "\" y=\"44\" text-anchor=\"middle\" fill=\"#555555\">" +
         xml_escape(subtitle) + "</text>\n";
  }
}

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

// Gridlines, frame, tick labels, axis labels and the panel's title.
void draw_axes(std::string& s, const Panel& p, const std::vector<Tick>& x_ticks,
               const std::vector<Tick>& y_ticks, const std::string& x_label, const std::string& y_label,
               const std::string& title) {
  s += "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (const Tick& t : x_ticks) {
    const std::string x = coord(p.px(t.value));
    s += "<line x1=\"" + x + "\" y1=\"" + coord(p.top) + "\" x2=\"" + x + "\" y2=\"" + coord(p.bottom) +
         "\"/>\n";
  }
  for (const Tick& t : y_ticks) {
    const std::string y = coord(p.py(t.value));
    s += "<line x1=\"" + coord(p.left) + "\" y1=\"" + y + "\" x2=\"" + coord(p.right) + "\" y2=\"" + y +
         "\"/>\n";
  }
  s += "</g>\n<rect x=\"" + coord(p.left) + "\" y=\"" + coord(p.top) + "\" width=\"" +
       coord(p.right - p.left) + "\" height=\"" + coord(p.bottom - p.top) +
       "\" fill=\"none\" stroke=\"#333333\"/>\n";
  s += "<g font-size=\"11\" fill=\"#333333\" text-anchor=\"middle\">\n";
  for (const Tick& t : x_ticks) {
    s += "<text x=\"" + coord(p.px(t.value)) + "\" y=\"" + coord(p.bottom + 16) + "\">" + t.label +
         "</text>\n";
  }
  s += "</g>\n<g font-size=\"11\" fill=\"#333333\" text-anchor=\"end\">\n";
  for (const Tick& t : y_ticks) {
    s += "<text x=\"" + coord(p.left - 6) + "\" y=\"" + coord(p.py(t.value) + 4) + "\">" + t.label +
         "</text>\n";
  }
  s += "</g>\n";
  const double cx = (p.left + p.right) / 2, cy = (p.top + p.bottom) / 2;
  s += "<text x=\"" + coord(cx) + "\" y=\"" + coord(p.bottom + 42) + "\" text-anchor=\"middle\">" + x_label +
       "</text>\n";
  s += "<text transform=\"translate(" + coord(p.left - 52) + " " + coord(cy) +
       ") rotate(-90)\" text-anchor=\"middle\">" + y_label + "</text>\n";
  if (!title.empty()) {
    s += "<text x=\"" + coord(cx) + "\" y=\"" + coord(p.top - 12) +
         "\" text-anchor=\"middle\" font-size=\"14\">" + title + "</text>\n";
  }
}

void no_data_note(std::string& s, const Panel& p, const char* text) {
  s += "<text x=\"" + coord((p.left + p.right) / 2) + "\" y=\"" + coord((p.top + p.bottom) / 2) +
       "\" text-anchor=\"middle\" fill=\"#777777\">" + text + "</text>\n";
}

std::string circle(double x, double y, double r, const std::string& fill, const std::string& extra,
                   const std::string& tooltip) {
  return "<circle cx=\"" + coord(x) + "\" cy=\"" + coord(y) + "\" r=\"" + coord(r) + "\" fill=\"" + fill +
         "\"" + extra + "><title>" + xml_escape(tooltip) + "</title></circle>\n";
}

// Legend rows in the column right of the plot.
class Legend {
 public:
  Legend(std::string& s, double x, double y) : s_(s), x_(x), y_(y) {}

  void series(const std::string& colour, const std::string& text) {
    s_ += "<line x1=\"" + coord(x_) + "\" y1=\"" + coord(y_) + "\" x2=\"" + coord(x_ + 24) + "\" y2=\"" +
          coord(y_) + "\" stroke=\"" + colour + "\" stroke-width=\"2\"/>\n";
    s_ += circle(x_ + 12, y_, 3, colour, "", text);
    label(text);
  }
  void dot(const std::string& colour, const std::string& text) {
    s_ += circle(x_ + 12, y_, 5, colour, " fill-opacity=\"0.5\" stroke=\"" + colour + "\"", text);
    label(text);
  }
  void cross(const std::string& text) {
    s_ += "<path d=\"" + cross_path(x_ + 12, y_, 5) +
          "\" stroke=\"#333333\" stroke-width=\"2\" fill=\"none\"/>\n";
    label(text);
  }
  void note(const std::string& text) {
    s_ += "<text x=\"" + coord(x_) + "\" y=\"" + coord(y_ + 4) + "\" fill=\"#555555\" font-size=\"11\">" +
          xml_escape(text) + "</text>\n";
    y_ += kLegendRow;
  }
  void gap() { y_ += kLegendRow / 2; }

 private:
  // Cut to fit the column; the full text stays in the tooltip.
  void label(const std::string& text) {
    s_ += "<text x=\"" + coord(x_ + 32) + "\" y=\"" + coord(y_ + 4) + "\"><title>" + xml_escape(text) +
          "</title>" + xml_escape(shorten(text, kLabelChars)) + "</text>\n";
    y_ += kLegendRow;
  }

  std::string& s_;
  double x_, y_;
};

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
        for (const auto& [x, y] : run) pts += coord(x) + "," + coord(y) + " ";
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
        markers += circle(x, y, 3.5, c, "",
                          where + with_ratio(q, *pt, g.reference(n), unit, std::string(" ") + kReference));
        continue;
      }
      flush();
      if (ok(*pt)) continue;
      const double y = std::min(p.top + 9 + 11 * failed_at[n]++, p.bottom - 6);
      s += "<g class=\"failed\"><title>" +
           xml_escape(where + (pt->status == "oom" ? "out of memory" : "error") +
                      (pt->error.empty() ? "" : ": " + pt->error)) +
           "</title><path d=\"" + cross_path(p.px(static_cast<double>(n)), y, 4.5) + "\" stroke=\"" + c +
           "\" stroke-width=\"2\" fill=\"none\"/></g>\n";
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
  const Scale x = padded_scale(lengths, 0.06, lengths.empty() ? 0 : lengths.front() / 2);
  const double right1 = kLeft + kPanelWidth, left2 = right1 + kPanelGap, right2 = left2 + kPanelWidth;
  const double legend_x = right2 + kLegendGap, width = legend_x + kLegendWidth;
  const bool any_failed =
      std::any_of(points.begin(), points.end(), [](const BenchPoint& p) { return !ok(p); });
  const double legend_rows = static_cast<double>(g.plugins.size()) + (any_failed ? 1.5 : 0) + 1.5;
  const double height = std::max(kHeight, std::ceil(kTop + 6 + legend_rows * kLegendRow));
  const Panel speed{kLeft, kTop, right1, height - kBottom, x, value_scale(plotted(points, kSpeed), 0.06)};
  const Panel memory{left2, kTop, right2, height - kBottom, x, value_scale(plotted(points, kMemory), 0.06)};

  std::string s;
  open_svg(s, width, height, "Training speed and peak memory", setup_text(points));
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
  for (std::size_t i = 0; i < g.plugins.size(); ++i) legend.series(colour(i), g.plugins[i]);
  if (any_failed) {
    legend.gap();
    legend.cross("out of memory / error");
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
    x = padded_scale(speeds, 0.2, speeds.front() / 2);
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
  const double height = std::max(kBubbleHeight, std::ceil(kTop + 6 + legend_rows * kLegendRow));
  const double right = kBubbleWidth - kBubbleLegend;
  const Panel p{kLeft + 10, kTop, right, height - kBottom, x, accuracy_scale(accuracies)};

  std::string s;
  open_svg(s, kBubbleWidth, height, "LRA accuracy, speed and memory", setup_text(points));
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
    s += circle(p.px(b->point->steps_per_s), p.py(b->accuracy), b->radius, c,
                " class=\"bubble\" fill-opacity=\"0.45\" stroke=\"" + c + "\" stroke-width=\"1.5\"",
                name(*b) + ": " + kSpeed.text(b->point->steps_per_s) + " steps/s at " +
                    length_label(b->point->length) + ", accuracy " + fixed(b->accuracy, 2) + "%, " +
                    kMemory.text(memory_gb(*b->point)));
  }
  // Labels after all bubbles, so that none is covered; up and right of the
  // bubble, or left where the label would run past the plot (its width
  // estimated from the characters).
  for (const Bubble& b : bubbles) {
    const double cx = p.px(b.point->steps_per_s), cy = p.py(b.accuracy), offset = b.radius * 0.7 + 4;
    const std::string label = shorten(name(b), kLabelChars);
    const bool left = cx + offset + kCharWidth * static_cast<double>(characters(label)) > p.right;
    s += "<text x=\"" + coord(left ? cx - offset : cx + offset) + "\" y=\"" + coord(cy - offset + 2) + "\"" +
         (left ? " text-anchor=\"end\"" : "") + " font-size=\"11\">" + xml_escape(label) + "</text>\n";
  }

  Legend legend(s, p.right + kLegendGap, kTop + 6);
  for (const Bubble& b : bubbles) legend.dot(colour(b.index), name(b));
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
