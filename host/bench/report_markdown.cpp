#include "bench/report_markdown.h"

#include <cmath>
#include <string_view>

#include "bench/report_grid.h"
#include "common/text.h"
#include "plot/svg_text.h"

namespace lra::host::bench {
namespace {

using svg::fixed;

// Text from the points inside Markdown (common/text.h): backslash escapes,
// as these tables always had.
std::string md_text(std::string_view text) { return text::markdown_cell(text, text::MarkdownEscape::backslashes); }

// A speed's repetitions, min-max: " [11.9–12.8]"; "" for a single repetition.
std::string range_text(const BenchPoint& p) {
  const Spread r = spread_of(p);
  if (p.repetition_steps_per_s.size() < 2) return "";
  return " [" + significant(r.min, 3) + "–" + significant(r.max, 3) + "]";
}

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
        cell = ok(*p) ? with_ratio(q, *p, g.reference(n), &q == &kSpeed ? range_text(*p) : "")
                      : p->status == "oom" ? "OOM" : "error";
        if (&q == &kSpeed && !speed_warning(*p).empty()) cell += " ⚠";
      }
      s += " " + cell + " |";
    }
    s += "\n";
  }
}

}  // namespace

std::string bench_markdown(const std::vector<BenchPoint>& points) {
  if (points.empty()) return "No benchmark results.\n";
  const Grid g(points);
  const std::string against = g.has_reference() ? std::string(", speed-up against ") + kReference : "";
  const std::string ratio_to = g.has_reference() ? std::string(", ratio to ") + kReference : "";
  std::string s = "### Speed (training steps per second, median [min–max] of the repetitions" + against + ")\n\n";
  md_table(s, g, kSpeed);
  std::string warnings;
  for (const BenchPoint& p : points)
    if (const std::string w = speed_warning(p); !w.empty())
      warnings += "- " + md_text(p.plugin) + " at " + length_label(p.length) + ": " + md_text(w) + "\n";
  if (!warnings.empty())
    s += "\n⚠ **Not a clean measurement** (a speed is to be trusted only when its repetitions agree within " +
         std::to_string(static_cast<int>(kSpreadWarning * 100)) +
         "% on an otherwise idle machine; measure again before citing these):\n\n" + warnings;
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


}  // namespace lra::host::bench
