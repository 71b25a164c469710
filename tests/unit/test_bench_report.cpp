// lra_bench_report: bench.json results and reading them back, the Markdown
// tables after the LRA paper's Table 2, the SVG charts.
#include <gtest/gtest.h>

#include "plot/svg_text.h"
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_point.h"
#include "bench/bench_report.h"
#include "bench/remaining_time.h"
#include "lra/status.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace lra::host::bench;

namespace {

BenchPoint point(const std::string& plugin, int64_t length, double steps_per_s, double gb) {
  BenchPoint p;
  p.plugin = plugin;
  p.length = length;
  p.batch = 32;
  p.device = "cuda:0 (NVIDIA H100 80GB HBM3)";
  p.dtype = "float32";
  p.steps_per_s = steps_per_s;
  p.repetition_steps_per_s = {steps_per_s * 0.98, steps_per_s, steps_per_s * 1.01};
  p.tokens_per_s = steps_per_s * 32 * static_cast<double>(length);
  p.peak_memory_bytes = static_cast<int64_t>(std::llround(gb * 1e9));
  p.peak_memory_kind = "cuda allocator peak";
  p.params = 1'234'567;
  return p;
}

BenchPoint failed(const std::string& plugin, int64_t length, const std::string& status = "oom",
                  const std::string& error = "CUDA out of memory. Tried to allocate 8.00 GiB") {
  BenchPoint p = point(plugin, length, 0, 0);
  p.status = status;
  p.error = error;
  p.repetition_steps_per_s.clear();
  p.tokens_per_s = 0;
  return p;
}

// Table 2 in miniature: transformer runs out of memory from 3K on, performer
// is faster and smaller, linformer fails at 4K and was not measured at 3K.
std::vector<BenchPoint> typical_points() {
  BenchPoint t1 = point("transformer", 1024, 2.0, 3.4);
  t1.flops_per_step = 1.2e13;
  t1.mfu = 0.41;
  BenchPoint t2 = point("transformer", 2048, 1.0, 10.0);
  t2.flops_per_step = 2.6e13;
  t2.mfu = 0.405;
  return {t1,
          t2,
          failed("transformer", 3072),
          failed("transformer", 4096),
          point("performer", 1024, 5.0, 0.41),
          point("performer", 2048, 2.6, 0.8),
          point("performer", 3072, 1.8, 1.2),
          point("performer", 4096, 1.3, 1.6),
          point("linformer", 1024, 5.6, 0.3),
          point("linformer", 2048, 3.0, 0.55),
          failed("linformer", 4096, "error", "shape mismatch in \"proj\" & <E>")};
}

json document(const std::vector<BenchPoint>& points) {
  return {{"schema", kBenchSchema},
          {"configuration", {{"task", "text"}, {"batch", 32}}},
          {"results", bench_points_json(points)}};
}

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no lra::Error thrown";
  return "";
}

void expect_same(const BenchPoint& a, const BenchPoint& b) {
  EXPECT_EQ(a.plugin, b.plugin);
  EXPECT_EQ(a.length, b.length);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.steps_per_s, b.steps_per_s);
  EXPECT_EQ(a.repetition_steps_per_s, b.repetition_steps_per_s);
  EXPECT_EQ(a.tokens_per_s, b.tokens_per_s);
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  EXPECT_EQ(a.peak_memory_kind, b.peak_memory_kind);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.flops_per_step, b.flops_per_step);
  EXPECT_EQ(a.mfu, b.mfu);
  EXPECT_EQ(a.load_average, b.load_average);
  EXPECT_EQ(a.cores, b.cores);
}

// The rows of `plugin` in the Markdown: [0] in the speed table, [1] in the memory table.
std::vector<std::string> rows(const std::string& markdown, const std::string& plugin) {
  std::vector<std::string> out;
  std::istringstream in(markdown);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| " + plugin + " |", 0) == 0) out.push_back(line);
  }
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// Minimal XML well-formedness: balanced, properly nested tags and only the
// five predefined entities; no word starting with "nan" or "inf" (plugin
// names such as linformer contain them). Enough for the
// subset of XML the charts write (xmllint checks the rest where installed).
::testing::AssertionResult well_formed(const std::string& svg) {
  if (svg.rfind("<svg", 0) != 0) return ::testing::AssertionFailure() << "does not start with <svg";
  if (svg.size() < 7 || svg.compare(svg.size() - 7, 7, "</svg>\n") != 0) {
    return ::testing::AssertionFailure() << "does not end with </svg>";
  }
  if (std::regex_search(lower(svg), std::regex("(^|[^a-z])(nan|inf)"))) {
    return ::testing::AssertionFailure() << "contains nan or inf";
  }
  std::vector<std::string> open;
  for (std::size_t i = 0; i < svg.size(); ++i) {
    if (svg[i] == '&') {
      const auto semi = svg.find(';', i);
      const std::string entity = semi == std::string::npos ? "" : svg.substr(i, semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" &&
          entity != "&apos;") {
        return ::testing::AssertionFailure() << "bad entity at " << i;
      }
    }
    if (svg[i] == '>') return ::testing::AssertionFailure() << "stray '>' at " << i;
    if (svg[i] != '<') continue;
    const auto end = svg.find('>', i);
    if (end == std::string::npos) return ::testing::AssertionFailure() << "unclosed tag at " << i;
    const std::string tag = svg.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos) return ::testing::AssertionFailure() << "'<' in tag at " << i;
    if (count(tag, "\"") % 2 != 0) return ::testing::AssertionFailure() << "odd quotes at " << i;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) {
        return ::testing::AssertionFailure() << "mismatched </" << tag.substr(1) << "> at " << i;
      }
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = end;
  }
  if (!open.empty()) return ::testing::AssertionFailure() << "unclosed <" << open.back() << ">";
  return ::testing::AssertionSuccess();
}

// The radii of the accuracy chart's bubbles, in drawing order.
std::vector<double> bubble_radii(const std::string& svg) {
  std::vector<double> out;
  for (auto pos = svg.find("class=\"bubble\""); pos != std::string::npos;
       pos = svg.find("class=\"bubble\"", pos + 1)) {
    const auto r = svg.rfind(" r=\"", pos) + 4;
    out.push_back(std::stod(svg.substr(r, svg.find('"', r) - r)));
  }
  return out;
}

fs::path temp_file(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return fs::temp_directory_path() /
         ("lra_bench_report_" + std::to_string(::getpid()) + "_" + info->name() + "_" + name);
}

}  // namespace

// --- bench.json ---------------------------------------------------------------

TEST(BenchJson, PointsHaveTheDocumentedKeys) {
  const json j = bench_points_json(typical_points());
  ASSERT_EQ(j.size(), 11u);
  const json& ok = j[0];
  for (const char* key :
       {"plugin", "length", "batch", "device", "dtype", "status", "steps_per_s", "repetition_steps_per_s",
        "tokens_per_s", "peak_memory_bytes", "peak_memory_kind", "params", "flops_per_step", "mfu"}) {
    EXPECT_TRUE(ok.contains(key)) << key;
  }
  EXPECT_FALSE(ok.contains("error"));
  EXPECT_EQ(ok["status"], "ok");
  EXPECT_EQ(ok["mfu"], 0.41);
  EXPECT_EQ(ok["peak_memory_bytes"], 3'400'000'000);
  const json& oom = j[2];
  EXPECT_EQ(oom["status"], "oom");
  EXPECT_EQ(oom["error"], "CUDA out of memory. Tried to allocate 8.00 GiB");
  EXPECT_TRUE(j[4]["flops_per_step"].is_null());
  EXPECT_TRUE(j[4]["mfu"].is_null());
  EXPECT_EQ(bench_points_json({}), json::array());
}

TEST(BenchJson, RoundTripThroughText) {
  const std::vector<BenchPoint> points = typical_points();
  const json doc = json::parse(document(points).dump(2));
  const std::vector<BenchPoint> back = bench_points_from_json(doc, "bench.json");
  ASSERT_EQ(back.size(), points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same(back[i], points[i]);
  }
  EXPECT_TRUE(bench_points_from_json(document({}), "bench.json").empty());
}

TEST(BenchJson, ErrorsNameTheSourceAndTheField) {
  const json good = document(typical_points());
  auto message = [&](auto&& mutate) {
    json doc = good;
    mutate(doc);
    return error_of([&] { bench_points_from_json(doc, "runs/bench.json"); });
  };
  const char* r = "results";
  EXPECT_EQ(message([&](json& d) { d[r][1].erase("steps_per_s"); }),
            "runs/bench.json: results[1].steps_per_s: missing");
  EXPECT_EQ(message([&](json& d) { d[r][0].erase("flops_per_step"); }),
            "runs/bench.json: results[0].flops_per_step: missing");
  EXPECT_EQ(message([&](json& d) { d[r][2].erase("error"); }), "runs/bench.json: results[2].error: missing");
  EXPECT_EQ(message([&](json& d) { d[r][2]["error"] = ""; }),
            "runs/bench.json: results[2].error: empty (a failed point needs a reason)");
  EXPECT_EQ(message([&](json& d) { d[r][0]["error"] = "x"; }),
            "runs/bench.json: results[0].error: present, but status is \"ok\"");
  EXPECT_EQ(message([&](json& d) { d[r][0]["status"] = "crashed"; }),
            "runs/bench.json: results[0].status: expected \"ok\", \"oom\" or \"error\", got \"crashed\"");
  EXPECT_EQ(message([&](json& d) { d[r][0]["length"] = "1K"; }),
            "runs/bench.json: results[0].length: expected an integer, got \"1K\"");
  EXPECT_EQ(message([&](json& d) { d[r][0]["length"] = 0; }),
            "runs/bench.json: results[0].length: 0 is not positive");
  EXPECT_EQ(message([&](json& d) { d[r][0]["batch"] = 32.5; }),
            "runs/bench.json: results[0].batch: expected an integer, got 32.5");
  EXPECT_EQ(message([&](json& d) { d[r][3]["peak_memory_bytes"] = -1; }),
            "runs/bench.json: results[3].peak_memory_bytes: -1 is negative");
  EXPECT_EQ(message([&](json& d) { d[r][0]["steps_per_s"] = 0; }),
            "runs/bench.json: results[0].steps_per_s: 0 is not positive for an ok point");
  EXPECT_EQ(message([&](json& d) { d[r][0]["mfu"] = "high"; }),
            "runs/bench.json: results[0].mfu: expected a number, got \"high\"");
  EXPECT_EQ(message([&](json& d) { d[r][0]["repetition_steps_per_s"][1] = nullptr; }),
            "runs/bench.json: results[0].repetition_steps_per_s[1]: expected a number, got null");
  EXPECT_EQ(message([&](json& d) { d[r][0]["plugin"] = 7; }),
            "runs/bench.json: results[0].plugin: expected a string, got 7");
  EXPECT_EQ(message([&](json& d) { d[r][4] = 3; }), "runs/bench.json: results[4]: expected an object, got 3");
  EXPECT_EQ(
      message([&](json& d) { d[r].push_back(d[r][0]); }),
      "runs/bench.json: results[11]: plugin \"transformer\" at length 1024 already measured in results[0]");
  EXPECT_EQ(message([&](json& d) { d[r] = json::object(); }),
            "runs/bench.json: results: expected an array, got {}");
  EXPECT_EQ(message([&](json& d) { d.erase("results"); }), "runs/bench.json: results: missing");
  EXPECT_EQ(message([&](json& d) { d["schema"] = "lrahost.forgetting/v1"; }),
            "runs/bench.json: schema: expected \"lrahost.bench/v1\", got \"lrahost.forgetting/v1\"");
  EXPECT_EQ(message([&](json& d) { d.erase("schema"); }), "runs/bench.json: schema: missing");
  EXPECT_EQ(message([&](json& d) { d = json::array(); }), "runs/bench.json: expected a JSON object, got []");
}

// --- Markdown -----------------------------------------------------------------

TEST(BenchMarkdown, SpeedUpsAgainstTransformer) {
  const std::string md = bench_markdown(typical_points());
  EXPECT_NE(md.find("| Model | 1K | 2K | 3K | 4K |\n| :--- | ---: | ---: | ---: | ---: |\n"),
            std::string::npos)
      << md;
  // 5.0 / 2.0 and 2.6 / 1.0; from 3K transformer is out of memory, so no speed-up.
  // Each speed with its repetitions' range (0.98x to 1.01x the median here).
  EXPECT_EQ(rows(md, "performer").at(0),
            "| performer | 5.00 [4.90–5.05] (2.5x) | 2.60 [2.55–2.63] (2.6x) | 1.80 [1.76–1.82] | 1.30 [1.27–1.31] |");
  EXPECT_EQ(rows(md, "transformer").at(0), "| transformer | 2.00 [1.96–2.02] (1.0x) | 1.00 [0.980–1.01] (1.0x) | OOM | OOM |");
  // Not measured at 3K, failed at 4K.
  EXPECT_EQ(rows(md, "linformer").at(0), "| linformer | 5.60 [5.49–5.66] (2.8x) | 3.00 [2.94–3.03] (3.0x) | - | error |");
  EXPECT_NE(md.find("### Speed (training steps per second, median [min–max] of the repetitions, speed-up against "
                    "transformer)"),
            std::string::npos);
  EXPECT_EQ(md.find("Not a clean measurement"), std::string::npos) << "repetitions within 3%, no load recorded";
}

// Issue 48: a speed carries its spread; one whose repetitions disagree by more
// than 10%, or measured on a machine loaded beyond its cores, is flagged in
// the table and explained under it, and bench.json says so too.
TEST(BenchMarkdown, SpreadOrLoadFlagsASpeed) {
  std::vector<BenchPoint> points = typical_points();
  points[4].repetition_steps_per_s = {3.4, 5.0, 5.1};  // performer 1K: 34% apart
  points[5].load_average = 3.7;                         // performer 2K on 2 cores
  points[5].cores = 2;
  points[6].load_average = 1.2;                         // performer 3K: idle enough
  points[6].cores = 2;
  const Spread s = spread_of(points[4]);
  EXPECT_DOUBLE_EQ(s.min, 3.4);
  EXPECT_DOUBLE_EQ(s.max, 5.1);
  EXPECT_NEAR(s.fraction, 0.34, 1e-12);
  EXPECT_EQ(spread_of(failed("x", 1024)).fraction, 0.0);
  const std::string md = bench_markdown(points);
  EXPECT_EQ(rows(md, "performer").at(0),
            "| performer | 5.00 [3.40–5.10] (2.5x) ⚠ | 2.60 [2.55–2.63] (2.6x) ⚠ | 1.80 [1.76–1.82] | 1.30 [1.27–1.31] |");
  EXPECT_NE(md.find("⚠ **Not a clean measurement**"), std::string::npos) << md;
  EXPECT_NE(md.find("- performer at 1K: its 3 repetitions spread 34.0% (3.4-5.1 steps/s, more than 10%)\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- performer at 2K: the machine's load average was 3.7 on 2 cores\n"), std::string::npos) << md;
  EXPECT_EQ(md.find("performer at 3K:"), std::string::npos) << md;
  const json j = bench_points_json(points);
  EXPECT_EQ(j[4]["warning"], "its 3 repetitions spread 34.0% (3.4-5.1 steps/s, more than 10%)");
  EXPECT_EQ(j[4]["spread"]["min_steps_per_s"], 3.4);
  EXPECT_EQ(j[5]["load_average"], 3.7);
  EXPECT_EQ(j[5]["cores"], 2);
  EXPECT_FALSE(j[6].contains("warning"));
  // Read back (bench --report): the load survives, and older files without it still read.
  const auto back = bench_points_from_json(document(points), "bench.json");
  EXPECT_EQ(back[5].load_average, 3.7);
  EXPECT_EQ(back[0].load_average, -1.0);
}

TEST(BenchMarkdown, MemoryInGigabytesWithRatios) {
  const std::string md = bench_markdown(typical_points());
  // 0.41 / 3.4 = 0.1206.
  EXPECT_EQ(rows(md, "performer").at(1),
            "| performer | 0.41 GB (0.12x) | 0.80 GB (0.080x) | 1.20 GB | 1.60 GB |");
  EXPECT_EQ(rows(md, "transformer").at(1), "| transformer | 3.40 GB (1.0x) | 10.00 GB (1.0x) | OOM | OOM |");
  EXPECT_NE(md.find("### Peak memory (GB, ratio to transformer)"), std::string::npos);
}

TEST(BenchMarkdown, OrderAndFacts) {
  std::vector<BenchPoint> points = typical_points();
  std::reverse(points.begin(), points.end());
  const std::string md = bench_markdown(points);
  // Lengths ascending whatever the input order; plugins in order of first appearance.
  EXPECT_NE(md.find("| Model | 1K | 2K | 3K | 4K |"), std::string::npos);
  EXPECT_LT(md.find("| linformer |"), md.find("| performer |"));
  EXPECT_LT(md.find("| performer |"), md.find("| transformer |"));
  EXPECT_NE(
      md.find("Device: cuda:0 (NVIDIA H100 80GB HBM3); dtype: float32; batch: 32; "
              "peak memory: cuda allocator peak, GB = 10^9 bytes; MFU: transformer 1K 41.0%, 2K 40.5%.\n"),
      std::string::npos)
      << md;
}

TEST(BenchMarkdown, WithoutTransformerNoRatios) {
  const std::string md =
      bench_markdown({point("performer", 1000, 0.0512, 0.05), point("local", 1000, 123.4, 2)});
  EXPECT_EQ(rows(md, "performer").at(0), "| performer | 0.0512 [0.0502–0.0517] |");
  EXPECT_EQ(rows(md, "local").at(0), "| local | 123 [121–125] |");
  EXPECT_EQ(rows(md, "local").at(1), "| local | 2.00 GB |");
  EXPECT_NE(md.find("| Model | 1000 |"), std::string::npos);
  EXPECT_NE(md.find("### Speed (training steps per second, median [min–max] of the repetitions)"), std::string::npos);
  EXPECT_NE(md.find("MFU: unknown."), std::string::npos);
}

TEST(BenchMarkdown, RatioRoundingCarries) {
  // 9.96x has two significant digits as "10", not "10.0".
  const std::string md = bench_markdown({point("transformer", 1024, 1.0, 1), point("fast", 1024, 9.96, 1)});
  EXPECT_EQ(rows(md, "fast").at(0), "| fast | 9.96 [9.76–10.1] (10x) |");
}

TEST(BenchMarkdown, EscapesTableSyntax) {
  const std::string md = bench_markdown({point("a|b<i>*\nc", 1024, 1, 1)});
  EXPECT_NE(md.find("| a\\|b\\<i\\>\\* c | 1.00 [0.980–1.01] |"), std::string::npos) << md;
  EXPECT_EQ(bench_markdown({}), "No benchmark results.\n");
}

// --- SVG ----------------------------------------------------------------------

TEST(BenchSvg, SpeedAndMemoryAgainstLength) {
  const std::string svg = bench_svg(typical_points());
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find(">training steps/s</text>"), std::string::npos);
  EXPECT_NE(svg.find(">peak memory (GB)</text>"), std::string::npos);
  EXPECT_EQ(svg.find("class=\"bubble\""), std::string::npos);
  // Three failed points, a cross in each panel.
  EXPECT_EQ(count(svg, "<g class=\"failed\">"), 6u);
  EXPECT_NE(
      svg.find(
          "<title>transformer, 3K: out of memory: CUDA out of memory. Tried to allocate 8.00 GiB</title>"),
      std::string::npos);
  EXPECT_NE(svg.find("<title>performer, 1K: 5.00 steps/s (2.5x transformer)</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>performer, 1K: 0.41 GB (0.12x transformer)</title>"), std::string::npos);
  EXPECT_NE(svg.find("&quot;proj&quot; &amp; &lt;E&gt;"), std::string::npos);
  // A line per plugin and panel, transformer's and linformer's only up to 2K.
  EXPECT_EQ(count(svg, "<polyline"), 6u);
  for (const char* label : {">1K</text>", ">2K</text>", ">3K</text>", ">4K</text>"}) {
    EXPECT_EQ(count(svg, label), 2u) << label;
  }
}

TEST(BenchSvg, LogScaleWhenValuesSpanMoreThanTenfold) {
  const std::string narrow = bench_svg({point("a", 1024, 2, 1), point("b", 1024, 15, 1)});
  EXPECT_NE(narrow.find(">steps/s</text>"), std::string::npos);
  const std::string wide = bench_svg({point("a", 1024, 1.5, 1), point("b", 1024, 40, 1)});
  EXPECT_NE(wide.find(">steps/s (log scale)</text>"), std::string::npos);
  EXPECT_TRUE(well_formed(wide));
  EXPECT_NE(wide.find(">5</text>"), std::string::npos);  // 1-2-5 ticks
  EXPECT_NE(wide.find(">20</text>"), std::string::npos);
}

TEST(BenchSvg, EscapesEverythingFromThePoints) {
  BenchPoint p = point("<script>alert(1)</script>", 1024, 1, 1);
  p.device = "dev & \"quoted\"";
  BenchPoint q = failed("'x'", 2048, "error", "</svg><b>");
  const std::string svg = bench_svg({p, q});
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("dev &amp; &quot;quoted&quot;"), std::string::npos);
  EXPECT_NE(svg.find("&apos;x&apos;, 2K: error: &lt;/svg&gt;&lt;b&gt;"), std::string::npos);
  const std::string chart = bench_svg({p, q}, {{p.plugin, 50}, {"<b>", 40}});
  EXPECT_TRUE(well_formed(chart));
  EXPECT_EQ(chart.find("<script>"), std::string::npos);
  EXPECT_EQ(chart.find("<b>"), std::string::npos);
}

TEST(VisibleText, BidiZeroWidthAndControlCharactersAreNamed) {
  using ::lra::host::svg::visible_text;
  // "transformer" spoofed with a right-to-left override and a zero-width space.
  EXPECT_EQ(visible_text("evil\u202Eremrofsnart"), "evil<U+202E>remrofsnart");
  EXPECT_EQ(visible_text("trans\u200Bformer"), "trans<U+200B>former");
  EXPECT_EQ(visible_text("a\u2066b\u2069c\u200Fd\u061Ce\uFEFFf"), "a<U+2066>b<U+2069>c<U+200F>d<U+061C>e<U+FEFF>f");
  EXPECT_EQ(visible_text("x\x1b[31my\x7f\u0085"), "x<U+001B>[31my<U+007F><U+0085>");
  EXPECT_EQ(visible_text("tab\tok, é, 中文, 🙂"), "tab\tok, é, 中文, 🙂");
  EXPECT_EQ(visible_text("\xff"), "<0xFF>");
}

TEST(BenchSvg, ControlCharactersAndBadUtf8AreReplaced) {
  const std::string svg =
      bench_svg({point(std::string("a\x01z\xff\xc0\x80") + "\xed\xa0\x80 ok é", 1024, 1, 1)});
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(svg.find('\x01'), std::string::npos);
  // Shown, not hidden or replaced: the control character and each bad byte are named.
  EXPECT_NE(svg.find("a&lt;U+0001&gt;z&lt;0xFF&gt;&lt;0xC0&gt;&lt;0x80&gt;&lt;0xED&gt;&lt;0xA0&gt;&lt;0x80&gt;"),
            std::string::npos);
  EXPECT_NE(svg.find(" ok é"), std::string::npos);
}

TEST(BenchSvg, DegenerateInputsStayValid) {
  const std::string empty = bench_svg({});
  EXPECT_TRUE(well_formed(empty));
  EXPECT_EQ(count(empty, ">no measurements</text>"), 2u);

  const std::string single = bench_svg({point("transformer", 1024, 2, 3)});
  EXPECT_TRUE(well_formed(single));
  EXPECT_EQ(count(single, ">1K</text>"), 2u);

  const std::string all_oom = bench_svg({failed("a", 1024), failed("b", 1024), failed("a", 2048)});
  EXPECT_TRUE(well_formed(all_oom));
  EXPECT_EQ(count(all_oom, "<g class=\"failed\">"), 6u);
  EXPECT_EQ(count(all_oom, ">no successful measurements</text>"), 2u);

  // Values no measurement should give: nothing non-finite may reach the SVG.
  BenchPoint nan = point("n", 1024, std::nan(""), 1);
  BenchPoint inf = point("i", 2048, std::numeric_limits<double>::infinity(), 1);
  BenchPoint zero = point("z", 1024, 0, 0);
  EXPECT_TRUE(well_formed(bench_svg({nan, inf, zero})));
  EXPECT_TRUE(well_formed(bench_svg({nan, inf, zero}, {{"n", 1}, {"i", 2}, {"z", 3}})));
  const std::string md = lower(bench_markdown({nan, inf, zero}));
  EXPECT_FALSE(std::regex_search(md, std::regex("(^|[^a-z])(nan|inf)"))) << md;
}

TEST(BenchSvg, ManyPluginsGrowThePage) {
  std::vector<BenchPoint> points;
  for (int i = 0; i < 30; ++i) points.push_back(point("plugin number " + std::to_string(i), 1024, 1 + i, 1));
  const std::string svg = bench_svg(points);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(svg.find("height=\"460\""), std::string::npos);
  // A marker in each panel and one in the legend per plugin; tab10, then ten
  // more colours, then again from the start.
  EXPECT_EQ(count(svg, "fill=\"#aec7e8\""), 3u);
  EXPECT_EQ(count(svg, "fill=\"#1f77b4\""), 6u);
}

TEST(BenchSvg, AccuracyChartOnlyWithAccuracies) {
  const std::vector<BenchPoint> points = typical_points();
  const std::string svg =
      bench_svg(points, {{"transformer", 54.39}, {"performer", 51.41}, {"bigbird", 55.01}});
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(svg.find(">peak memory (GB)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">average LRA accuracy (%)</text>"), std::string::npos);
  // Each at its longest ok length: transformer at 2K (10 GB), performer at 4K
  // (1.6 GB): areas 10 : 1.6, radii 32 and 32 * 0.4; the larger drawn first.
  EXPECT_EQ(bubble_radii(svg), (std::vector<double>{32, 12.8}));
  EXPECT_NE(svg.find("<title>transformer @2K: 1.00 steps/s at 2K, accuracy 54.39%, 10.00 GB</title>"),
            std::string::npos);
  EXPECT_NE(svg.find("<title>performer: 1.30 steps/s at 4K, accuracy 51.41%, 1.60 GB</title>"),
            std::string::npos);
  EXPECT_NE(svg.find(">not shown, no accuracy:</text>"), std::string::npos);
  EXPECT_NE(svg.find(">  linformer</text>"), std::string::npos);
  EXPECT_NE(svg.find(">not shown, not measured:</text>"), std::string::npos);
  EXPECT_NE(svg.find(">  bigbird</text>"), std::string::npos);

  const std::string none = bench_svg(points, {{"local", 50}});
  EXPECT_TRUE(well_formed(none));
  EXPECT_TRUE(bubble_radii(none).empty());
  EXPECT_NE(none.find("no plugin with both an accuracy and a measurement"), std::string::npos);

  const std::string oom_only = bench_svg({failed("a", 1024)}, {{"a", 50}});
  EXPECT_TRUE(well_formed(oom_only));
  EXPECT_NE(oom_only.find(">not shown, no ok measurement:</text>"), std::string::npos);

  const std::string single = bench_svg({point("a", 1024, 3, 0)}, {{"a", 61.2}});
  EXPECT_TRUE(well_formed(single));
  EXPECT_EQ(bubble_radii(single).size(), 1u);
}

TEST(BenchSvg, XmllintAcceptsTheCharts) {
  if (std::system("command -v xmllint > /dev/null 2>&1") != 0) GTEST_SKIP() << "xmllint not installed";
  std::vector<BenchPoint> hostile = typical_points();
  hostile.push_back(point("<script>alert(1)</script>", 1024, 4, 1));
  hostile.push_back(point(std::string("ctl\x01\x1f\xfe"), 2048, 4, 1));
  hostile.push_back(failed("&amp;", 4096, "error", "a\nb\tc ]]> <![CDATA["));
  const std::vector<std::string> svgs = {
      bench_svg(typical_points()),
      bench_svg(hostile),
      bench_svg({}),
      bench_svg({point("transformer", 1024, 2, 3)}),
      bench_svg({failed("a", 1024)}),
      bench_svg(hostile, {{"<script>alert(1)</script>", 50}, {"transformer", 55}, {"\x02", 3}}),
      bench_svg({}, {{"x", 1}}),
  };
  for (std::size_t i = 0; i < svgs.size(); ++i) {
    const fs::path file = temp_file(std::to_string(i) + ".svg");
    { std::ofstream(file) << svgs[i]; }
    EXPECT_EQ(std::system(("xmllint --noout '" + file.string() + "'").c_str()), 0) << svgs[i];
    fs::remove(file);
  }
}

// Issue 48: the time left is learnt from the configurations measured so far,
// per plugin and length, not averaged over them: before a 4K attention step
// the sweep says what that step will cost.
TEST(BenchEta, LearnsEachConfigurationsCostFromWhatWasMeasured) {
  RemainingTime eta;
  EXPECT_FALSE(eta.estimate({{"transformer", 1024}}).has_value()) << "nothing measured: no estimate";
  eta.record("transformer", 1024, 10.0);
  // The same plugin, longer: quadratic until its own growth is known.
  EXPECT_NEAR(*eta.estimate({{"transformer", 2048}}), 40.0, 1e-9);
  eta.record("transformer", 2048, 30.0);  // its own growth: log2(3) = 1.585
  EXPECT_NEAR(*eta.estimate({{"transformer", 4096}}), 90.0, 1e-9);
  // A plugin not measured yet: the measured plugins at that length.
  EXPECT_NEAR(*eta.estimate({{"performer", 1024}}), 10.0, 1e-9);
  EXPECT_NEAR(*eta.estimate({{"transformer", 4096}, {"performer", 1024}}), 100.0, 1e-9);
  // Growth is clamped to [1, 2]: a plugin that got faster with length is not predicted to speed up.
  eta.record("performer", 1024, 8.0);
  eta.record("performer", 2048, 7.0);
  EXPECT_NEAR(*eta.estimate({{"performer", 4096}}), 14.0, 1e-9);
  // The average so far (40 s over 2 configurations) would say 40 s for the last two.
  EXPECT_EQ(progress_text(2, 4, 40.0, 100.0), "[3/4, 40 s so far, about 1 min 40 s left]");
  EXPECT_EQ(progress_text(0, 4, 0.0, std::nullopt), "[1/4]");
}
