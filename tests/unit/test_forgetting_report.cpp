// lra_forgetting_report: per-length statistics, the memory-length rule,
// forgetting.json points and the SVG plots.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "forgetting/curve.h"
#include "forgetting/memory_length.h"
#include "forgetting/plot_svg.h"
#include "forgetting/report_json.h"
#include "forgetting/stats.h"
#include "lra/status.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace lra::host::forgetting;

namespace {

const double kPi = std::acos(-1.0);

// A point with the given means and R = 2 equal accuracies, so summarize keeps the means.
CurvePoint point(int64_t length, double copy, double lm) {
  CurvePoint p;
  p.length = length;
  p.copy_accs = {copy, copy};
  p.lm_accs = {lm, lm};
  summarize(p);
  return p;
}

CurvePoint failed_point(int64_t length, const std::string& why = "out of memory") {
  CurvePoint p;
  p.length = length;
  p.error = why;
  return p;
}

Curve finalized(std::vector<CurvePoint> points, int64_t train_length = 0,
                const std::string& label = "model") {
  Curve c;
  c.label = label;
  c.train_length = train_length;
  c.points = std::move(points);
  finalize(c);
  return c;
}

// A typical curve: fine to 512, coarse to 2048, amnesia after; varied accuracies.
Curve typical_curve(int64_t train_length = 1024, const std::string& label = "model") {
  std::vector<CurvePoint> pts;
  const std::vector<std::pair<int64_t, std::vector<double>>> copy = {
      {128, {1.0, 0.996, 1.0}}, {512, {0.995, 1.0, 0.998}}, {1024, {0.9, 0.85, 0.95}},
      {2048, {0.5, 0.45, 0.6}}, {4096, {0.31, 0.29, 0.3}}};
  for (const auto& [length, accs] : copy) {
    CurvePoint p;
    p.length = length;
    p.copy_accs = accs;
    p.lm_accs = {0.3, 0.32, 0.29};
    pts.push_back(p);
  }
  return finalized(pts, train_length, label);
}

template <class Fn>
std::string error_of(Fn&& fn, lra::ErrorKind expected_kind) {
  try {
    fn();
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), expected_kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no lra::Error thrown";
  return "";
}

json document(const Curve& c) {
  json doc = curve_summary_json(c);
  doc["schema"] = kForgettingSchema;
  doc["label"] = c.label;
  doc["configuration"] = {{"train_length", c.train_length}, {"repetitions", 3}};
  doc["model"] = {{"name", c.label}};
  return doc;
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
// five predefined entities. Enough for the subset of XML the plots write.
::testing::AssertionResult well_formed(const std::string& svg) {
  if (svg.rfind("<svg", 0) != 0) return ::testing::AssertionFailure() << "does not start with <svg";
  if (svg.size() < 7 || svg.compare(svg.size() - 7, 7, "</svg>\n") != 0) {
    return ::testing::AssertionFailure() << "does not end with </svg>";
  }
  const std::string low = lower(svg);
  if (low.find("nan") != std::string::npos || low.find("inf") != std::string::npos) {
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
    if (svg[i] == '>') {
      return ::testing::AssertionFailure() << "stray '>' at " << i;
    }
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

// The labels of the x-axis ticks (the text-anchor="middle" group of font-size 11).
std::vector<std::string> x_tick_labels(const std::string& svg) {
  const std::string head = "<g font-size=\"11\" fill=\"#333333\" text-anchor=\"middle\">";
  auto pos = svg.find(head);
  const auto end = svg.find("</g>", pos);
  std::vector<std::string> labels;
  while ((pos = svg.find("<text", pos + 1)) < end) {
    const auto from = svg.find('>', pos) + 1;
    labels.push_back(svg.substr(from, svg.find('<', from) - from));
  }
  return labels;
}

fs::path temp_file(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return fs::temp_directory_path() /
         ("lra_forgetting_" + std::to_string(::getpid()) + "_" + info->name() + "_" + name);
}

}  // namespace

// --- statistics -------------------------------------------------------------

TEST(ForgettingStats, MeanAndPopulationStd) {
  EXPECT_DOUBLE_EQ(mean({1, 2, 3, 4}), 2.5);
  // Deviations ±1.5, ±0.5: variance (2.25 + 0.25) * 2 / 4 = 1.25 (ddof 0, not 5/3).
  EXPECT_DOUBLE_EQ(population_std({1, 2, 3, 4}), std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(population_std({0.7}), 0.0);
  EXPECT_TRUE(std::isnan(mean({})));
  EXPECT_TRUE(std::isnan(population_std({})));
}

TEST(ForgettingStats, PairedTTestThreeDegreesOfFreedom) {
  // d = a - b = {-0.1, -0.05, -0.2, -0.05}: mean -0.1, sum of squared
  // deviations 0.015, sd = sqrt(0.015 / 3), se = sd / 2, so |t| = 2 * sqrt(2).
  const std::vector<double> a = {0.1, 0.2, 0.3, 0.4}, b = {0.2, 0.25, 0.5, 0.45};
  const double t = 2 * std::sqrt(2.0);
  // Student's t with 3 df has a closed-form CDF; with theta = atan(t / sqrt(3)),
  // the two-sided p is 1 - (2 / pi) (theta + sin(theta) cos(theta)).
  const double theta = std::atan(t / std::sqrt(3.0));
  const double expected = 1 - 2 / kPi * (theta + std::sin(theta) * std::cos(theta));
  // Second route: Simpson's rule on the density c (1 + x^2 / 3)^-2 over [0, t],
  // c = Gamma(2) / (sqrt(3 pi) Gamma(1.5)) = 2 / (pi sqrt(3)).
  const double c = 2 / (kPi * std::sqrt(3.0));
  auto density = [&](double x) { return c / ((1 + x * x / 3) * (1 + x * x / 3)); };
  const int n = 20000;
  const double h = t / n;
  double simpson = density(0) + density(t);
  for (int i = 1; i < n; ++i) simpson += (i % 2 ? 4 : 2) * density(i * h);
  EXPECT_NEAR(1 - 2 * simpson * h / 3, expected, 1e-10);
  EXPECT_NEAR(expected, 0.066276, 1e-6);  // tables: t(3) = 2.83 lies between p 0.10 and 0.05
  EXPECT_NEAR(paired_t_test_p(a, b), expected, 1e-12);
  EXPECT_NEAR(paired_t_test_p(b, a), expected, 1e-12);  // two-sided: order does not matter
}

TEST(ForgettingStats, PairedTTestOneDegreeOfFreedomIsCauchy) {
  // d = {-0.2, -0.1}: mean -0.15, sd = sqrt(0.005), se = sd / sqrt(2) = 0.05, |t| = 3.
  // With 1 df the t distribution is Cauchy: p = 1 - (2 / pi) atan(|t|).
  EXPECT_NEAR(paired_t_test_p({0.1, 0.5}, {0.3, 0.6}), 1 - 2 / kPi * std::atan(3.0), 1e-12);
}

TEST(ForgettingStats, PairedTTestUndefinedCases) {
  EXPECT_EQ(paired_t_test_p({0.3, 0.5, 0.7}, {0.3, 0.5, 0.7}), 1.0);  // scipy: NaN
  EXPECT_EQ(paired_t_test_p({0.4}, {0.9}), 1.0);                      // n < 2
  EXPECT_EQ(paired_t_test_p({}, {}), 1.0);
  // Exactly representable constant difference 0.25: sd 0, |t| = inf, p = 0.
  EXPECT_EQ(paired_t_test_p({0.25, 0.5, 0.75}, {0.5, 0.75, 1.0}), 0.0);
  EXPECT_EQ(paired_t_test_p({0.1, NAN}, {0.2, 0.3}), 1.0);
  error_of([] { paired_t_test_p({0.1, 0.2}, {0.1}); }, lra::ErrorKind::internal);
}

TEST(ForgettingStats, SummarizeFillsMeansStdsAndP) {
  CurvePoint p;
  p.length = 64;
  p.copy_accs = {1.0, 0.5};
  p.lm_accs = {0.25, 0.75};
  summarize(p);
  EXPECT_DOUBLE_EQ(p.copy_mean, 0.75);
  EXPECT_DOUBLE_EQ(p.copy_std, 0.25);
  EXPECT_DOUBLE_EQ(p.lm_mean, 0.5);
  EXPECT_DOUBLE_EQ(p.lm_std, 0.25);
  // d = lm - copy = {-0.75, 0.25}: mean -0.25, se 0.5, |t| = 0.5, 1 df.
  EXPECT_NEAR(p.p_value, 1 - 2 / kPi * std::atan(0.5), 1e-12);
}

TEST(ForgettingStats, SummarizeRejectsMalformedPoints) {
  CurvePoint p;
  p.length = 300;
  const std::string empty = error_of([&] { summarize(p); }, lra::ErrorKind::data);
  EXPECT_NE(empty.find("300"), std::string::npos) << empty;
  p.copy_accs = {0.5, 0.6};
  p.lm_accs = {0.5};
  const std::string mismatch = error_of([&] { summarize(p); }, lra::ErrorKind::data);
  EXPECT_NE(mismatch.find("lm_accs"), std::string::npos) << mismatch;
}

// --- memory lengths -----------------------------------------------------------

TEST(ForgettingMemoryLength, FailsAtFirstLength) {
  const std::vector<CurvePoint> pts = {point(8, 0.975, 0.5), point(16, 1.0, 0.5), point(32, 1.0, 0.5)};
  EXPECT_EQ(fine_length(pts).value, 0);
  EXPECT_FALSE(fine_length(pts).censored);
  EXPECT_EQ(coarse_length(pts).value, 32);
  EXPECT_TRUE(coarse_length(pts).censored);
}

TEST(ForgettingMemoryLength, HoldsEverywhereIsCensored) {
  const std::vector<CurvePoint> pts = {point(100, 1.0, 0.4), point(200, 0.995, 0.4), point(300, 0.999, 0.4)};
  const MemoryLength fine = fine_length(pts);
  EXPECT_EQ(fine.value, 300);
  EXPECT_TRUE(fine.censored);
}

TEST(ForgettingMemoryLength, DipInTheMiddleStopsTheScan) {
  // The condition holds again at 400, but the rule needs it at every shorter length.
  const std::vector<CurvePoint> pts = {point(100, 1.0, 0.4), point(200, 1.0, 0.4), point(300, 0.98, 0.4),
                                       point(400, 1.0, 0.4)};
  EXPECT_EQ(fine_length(pts).value, 200);
  EXPECT_FALSE(fine_length(pts).censored);
}

TEST(ForgettingMemoryLength, ThresholdsAreStrict) {
  EXPECT_EQ(fine_length({point(10, 0.99, 0.0)}).value, 0);            // > 0.99, not >=
  EXPECT_EQ(coarse_length({point(10, 0.5, 0.495)}).value, 0);         // 0.5 points apart
  EXPECT_EQ(coarse_length({point(10, 0.5, 0.48)}).value, 10);         // 2 points apart
  EXPECT_EQ(coarse_length({point(10, 0.3, 0.45)}).value, 0);          // LM above copy
}

TEST(ForgettingMemoryLength, ErrorPointStopsTheScanAndIsNotCensored) {
  const std::vector<CurvePoint> pts = {point(100, 1.0, 0.4), point(200, 1.0, 0.4), failed_point(300)};
  EXPECT_EQ(fine_length(pts).value, 200);
  EXPECT_FALSE(fine_length(pts).censored);
  EXPECT_EQ(coarse_length(pts).value, 200);
  EXPECT_FALSE(coarse_length(pts).censored);
  // A failure in the middle also ends it, though later points are fine.
  const std::vector<CurvePoint> mid = {point(100, 1.0, 0.4), failed_point(200), point(300, 1.0, 0.4)};
  EXPECT_EQ(fine_length(mid).value, 100);
  EXPECT_FALSE(fine_length(mid).censored);
  EXPECT_EQ(fine_length({failed_point(100)}).value, 0);
}

TEST(ForgettingMemoryLength, NoPoints) {
  EXPECT_EQ(fine_length({}).value, 0);
  EXPECT_FALSE(fine_length({}).censored);
}

TEST(ForgettingMemoryLength, FinalizeSummarizesAndSetsEverything) {
  Curve c;
  c.label = "m";
  CurvePoint p;
  p.length = 10;
  p.copy_accs = {1.0, 1.0};
  p.lm_accs = {0.5, 0.7};
  c.points = {p, failed_point(20)};
  finalize(c);
  EXPECT_DOUBLE_EQ(c.points[0].copy_mean, 1.0);
  EXPECT_DOUBLE_EQ(c.points[0].lm_mean, 0.6);
  EXPECT_FALSE(c.complete);
  EXPECT_EQ(c.fine.value, 10);
  EXPECT_FALSE(c.fine.censored);
  EXPECT_EQ(c.coarse.value, 10);

  c.points.pop_back();
  finalize(c);
  EXPECT_TRUE(c.complete);
  EXPECT_TRUE(c.fine.censored);

  c.points = {point(20, 1, 0), point(10, 1, 0)};
  const std::string msg = error_of([&] { finalize(c); }, lra::ErrorKind::data);
  EXPECT_NE(msg.find("not ascending"), std::string::npos) << msg;
}

// --- JSON ---------------------------------------------------------------------

TEST(ForgettingJson, PointsAndSummaryFields) {
  Curve c = typical_curve();
  c.points.push_back(failed_point(8192, "CUDA out of memory"));
  finalize(c);
  const json pts = points_to_json(c);
  ASSERT_EQ(pts.size(), 6u);
  EXPECT_EQ(pts[5], (json{{"length", 8192}, {"error", "CUDA out of memory"}}));
  for (const char* key : {"length", "copy_mean", "copy_std", "lm_mean", "lm_std", "copy_accs", "lm_accs",
                          "p_value"}) {
    EXPECT_TRUE(pts[0].contains(key)) << key;
  }
  EXPECT_EQ(pts[0].size(), 8u);
  const json summary = curve_summary_json(c);
  EXPECT_EQ(summary["fine_length"], 512);
  EXPECT_EQ(summary["fine_length_censored"], false);
  EXPECT_EQ(summary["coarse_length"], 2048);
  EXPECT_EQ(summary["coarse_length_censored"], false);
  EXPECT_EQ(summary["complete"], false);
  EXPECT_EQ(summary["points"], pts);
}

TEST(ForgettingJson, RoundTripThroughText) {
  Curve c = typical_curve(1024, "lra-83m");
  c.points.push_back(failed_point(8192, "out of memory"));
  finalize(c);
  const Curve back = curve_from_json(json::parse(document(c).dump(2)), "forgetting.json");
  EXPECT_EQ(back.label, c.label);
  EXPECT_EQ(back.train_length, 1024);
  EXPECT_EQ(back.complete, c.complete);
  EXPECT_EQ(back.fine.value, c.fine.value);
  EXPECT_EQ(back.fine.censored, c.fine.censored);
  EXPECT_EQ(back.coarse.value, c.coarse.value);
  EXPECT_EQ(back.coarse.censored, c.coarse.censored);
  ASSERT_EQ(back.points.size(), c.points.size());
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    const CurvePoint &x = c.points[i], &y = back.points[i];
    EXPECT_EQ(y.length, x.length);
    EXPECT_EQ(y.error, x.error);
    EXPECT_EQ(y.copy_accs, x.copy_accs);
    EXPECT_EQ(y.lm_accs, x.lm_accs);
    EXPECT_EQ(y.copy_mean, x.copy_mean);
    EXPECT_EQ(y.copy_std, x.copy_std);
    EXPECT_EQ(y.lm_mean, x.lm_mean);
    EXPECT_EQ(y.lm_std, x.lm_std);
    EXPECT_EQ(y.p_value, x.p_value);
  }
  EXPECT_EQ(points_to_json(back), points_to_json(c));
}

TEST(ForgettingJson, MemoryLengthsAreRecomputedNotTrusted) {
  json doc = document(typical_curve());
  doc["fine_length"] = 999999;
  doc.erase("configuration");
  const Curve back = curve_from_json(doc, "a.json");
  EXPECT_EQ(back.fine.value, 512);
  EXPECT_EQ(back.train_length, 0);
}

TEST(ForgettingJson, ErrorsNameSourceFieldAndValue) {
  const json good = document(typical_curve());
  auto message = [&](auto edit) {
    json doc = good;
    edit(doc);
    return error_of([&] { curve_from_json(doc, "a.json"); }, lra::ErrorKind::usage);
  };
  EXPECT_EQ(message([](json& d) { d["points"][3].erase("copy_mean"); }),
            "a.json: points[3].copy_mean: missing");
  EXPECT_EQ(message([](json& d) { d.erase("schema"); }), "a.json: schema: missing");
  const std::string schema = message([](json& d) { d["schema"] = "lrahost.forgetting/v0"; });
  EXPECT_NE(schema.find("a.json: schema:"), std::string::npos) << schema;
  EXPECT_NE(schema.find("lrahost.forgetting/v0"), std::string::npos) << schema;
  EXPECT_EQ(message([](json& d) { d["points"] = json::object(); }),
            "a.json: points: expected an array, got {}");
  EXPECT_EQ(message([](json& d) { d["points"][1]["lm_mean"] = "high"; }),
            "a.json: points[1].lm_mean: expected a number, got \"high\"");
  EXPECT_EQ(message([](json& d) { d["points"][0]["copy_accs"][2] = 1.5; }),
            "a.json: points[0].copy_accs[2]: 1.5 is not in [0, 1]");
  EXPECT_EQ(message([](json& d) { d["points"][2]["length"] = 100; }),
            "a.json: points[2].length: 100 does not exceed the previous length 512");
  EXPECT_EQ(message([](json& d) { d["points"][0].erase("length"); }), "a.json: points[0].length: missing");
  EXPECT_EQ(message([](json& d) { d["points"][1]["lm_accs"] = {0.5}; }),
            "a.json: points[1].lm_accs: 1 values, but copy_accs has 3");
  EXPECT_EQ(message([](json& d) { d["configuration"]["train_length"] = "1k"; }),
            "a.json: configuration.train_length: expected an integer, got \"1k\"");
  EXPECT_EQ(message([](json& d) { d.erase("label"); }), "a.json: label: missing");
  EXPECT_EQ(error_of([] { curve_from_json(json::array(), "a.json"); }, lra::ErrorKind::usage),
            "a.json: expected a JSON object, got []");
}

TEST(ForgettingJson, LoadCurveFile) {
  const fs::path file = temp_file("curve.json");
  {
    std::ofstream(file) << document(typical_curve()).dump();
  }
  EXPECT_EQ(load_curve_file(file).coarse.value, 2048);

  {
    std::ofstream(file) << "{\"schema\": ";
  }
  const std::string bad = error_of([&] { load_curve_file(file); }, lra::ErrorKind::usage);
  EXPECT_NE(bad.find(file.string() + ": not valid JSON"), std::string::npos) << bad;
  fs::remove(file);

  const std::string missing = error_of([&] { load_curve_file(file); }, lra::ErrorKind::usage);
  EXPECT_NE(missing.find(file.string()), std::string::npos) << missing;
}

// --- SVG ----------------------------------------------------------------------

TEST(ForgettingSvg, TypicalCurve) {
  const std::string svg = forgetting_svg(typical_curve(1024), {"Forgetting curve", false, 1000, 500});
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find("#ff7f0e"), std::string::npos);  // copy
  EXPECT_NE(svg.find("#1f77b4"), std::string::npos);  // LM
  EXPECT_EQ(count(svg, "class=\"copy-band\""), 1u);
  EXPECT_EQ(count(svg, "class=\"lm-band\""), 1u);
  EXPECT_EQ(count(svg, "<circle"), 10u);
  EXPECT_NE(svg.find(">Sequence length<"), std::string::npos);
  EXPECT_NE(svg.find(">Accuracy<"), std::string::npos);
  EXPECT_NE(svg.find(">Forgetting curve</text>"), std::string::npos);
  EXPECT_NE(svg.find("fine-grained: 512<"), std::string::npos);
  EXPECT_NE(svg.find("coarse-grained: 2048<"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"region-fine\""), 1u);
  EXPECT_EQ(count(svg, "class=\"region-coarse\""), 1u);
  EXPECT_EQ(count(svg, "class=\"region-amnesia\""), 1u);
  EXPECT_EQ(count(svg, "class=\"failed\""), 0u);
}

TEST(ForgettingSvg, TrainingLengthLinesOnlyWhenKnown) {
  const std::string with = forgetting_svg(typical_curve(1024), {});
  EXPECT_EQ(count(with, "class=\"train-length\""), 2u);
  EXPECT_NE(with.find("training length = 1024"), std::string::npos);
  EXPECT_NE(with.find("half = 512"), std::string::npos);
  EXPECT_NE(with.find("stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray"), std::string::npos);

  const std::string without = forgetting_svg(typical_curve(0), {});
  EXPECT_TRUE(well_formed(without));
  EXPECT_EQ(count(without, "class=\"train-length\""), 0u);
  EXPECT_EQ(without.find("training length"), std::string::npos);
}

TEST(ForgettingSvg, EscapesTextFromCurves) {
  const std::string svg =
      forgetting_svg(typical_curve(0, "<script>alert(1)</script>"), {});  // title defaults to the label
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);

  Curve c = typical_curve();
  c.points.push_back(failed_point(8192, "bad \"alloc\" & 'more' <x>"));
  finalize(c);
  const std::string failed = forgetting_svg(c, {"a & b \"quoted\" 'single'", false, 1000, 500});
  EXPECT_TRUE(well_formed(failed));
  EXPECT_NE(failed.find("a &amp; b &quot;quoted&quot; &apos;single&apos;"), std::string::npos);
  EXPECT_NE(failed.find("bad &quot;alloc&quot; &amp; &apos;more&apos; &lt;x&gt;"), std::string::npos);
}

TEST(ForgettingSvg, FailedPointsAndCensoredLengths) {
  Curve c = finalized({point(64, 1.0, 0.3), point(128, 1.0, 0.3), failed_point(256), failed_point(512)}, 256);
  const std::string svg = forgetting_svg(c, {});
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(count(svg, "class=\"failed\""), 2u);
  EXPECT_NE(svg.find("length 256 failed: out of memory"), std::string::npos);
  EXPECT_NE(svg.find("failed: 2 lengths"), std::string::npos);
  EXPECT_NE(svg.find("fine-grained: 128<"), std::string::npos);  // not censored: it failed
  EXPECT_EQ(count(svg, "class=\"region-amnesia\""), 0u);             // unknown beyond the failure

  const std::string censored =
      forgetting_svg(finalized({point(64, 1.0, 0.3), point(128, 1.0, 0.3)}), {});
  EXPECT_NE(censored.find("fine-grained: &gt; 128<"), std::string::npos);
  EXPECT_NE(censored.find("coarse-grained: &gt; 128<"), std::string::npos);
}

TEST(ForgettingSvg, DegenerateInputs) {
  const std::vector<Curve> cases = {
      finalized({}),
      finalized({}, 1024),
      finalized({point(512, 0.5, 0.5)}),
      finalized({point(512, 0.5, 0.5)}, 2048),
      finalized({failed_point(100)}),
      finalized({failed_point(100), failed_point(200)}, 150),
      finalized({point(100, 1.0, 0.2), failed_point(200), point(300, 0.7, 0.2)}),
      finalized({point(1, 1.5, -0.5)}),  // out-of-range accuracies are clamped to the frame
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    for (bool log_x : {false, true}) {
      const std::string svg = forgetting_svg(cases[i], {"", log_x, 500, 250});
      EXPECT_TRUE(well_formed(svg)) << "case " << i << " log " << log_x;
    }
  }
  EXPECT_NE(forgetting_svg(cases[0], {}).find("no completed lengths"), std::string::npos);
  EXPECT_NE(forgetting_svg(cases[4], {}).find("no completed lengths"), std::string::npos);
  EXPECT_EQ(count(forgetting_svg(cases[4], {}), "class=\"region-"), 0u);
}

TEST(ForgettingSvg, TooSmallIsAUsageError) {
  error_of([] { forgetting_svg(typical_curve(), {"", false, 100, 100}); }, lra::ErrorKind::usage);
  error_of([] { compare_svg({}, {"", false, 1000, 10}); }, lra::ErrorKind::usage);
}

TEST(ForgettingSvg, TicksAreRound) {
  auto labels_for = [](std::vector<int64_t> lengths, bool log_x) {
    std::vector<CurvePoint> pts;
    for (int64_t l : lengths) pts.push_back(point(l, 0.5, 0.4));
    return x_tick_labels(forgetting_svg(finalized(pts), {"", log_x, 1000, 500}));
  };
  const auto linear = labels_for({8, 523, 1039, 16000}, false);
  EXPECT_GE(linear.size(), 5u);
  EXPECT_LE(linear.size(), 10u);
  EXPECT_NE(std::find(linear.begin(), linear.end(), "10000"), linear.end());
  for (const auto& lengths : std::vector<std::vector<int64_t>>{{1, 7}, {100, 130}, {8, 25}, {512}, {3, 1000000}}) {
    const auto labels = labels_for(lengths, false);
    EXPECT_GE(labels.size(), 5u) << lengths.front();
    EXPECT_LE(labels.size(), 10u) << lengths.front();
  }
  const auto log = labels_for({8, 16, 32, 16000}, true);
  EXPECT_EQ(log, (std::vector<std::string>{"16", "64", "256", "1024", "4096", "16384"}));
  const auto wide = labels_for({1, 1000000}, true);
  EXPECT_LE(wide.size(), 10u);
  EXPECT_GE(wide.size(), 5u);
  EXPECT_NE(forgetting_svg(finalized({point(8, 1, 0)}), {"", true, 1000, 500}).find("(log scale)"),
            std::string::npos);
}

TEST(ForgettingSvg, CompareOverlaysCurves) {
  Curve b = typical_curve(2048, "B & co");
  b.points.push_back(failed_point(8192));
  finalize(b);
  const std::string svg = compare_svg({typical_curve(1024, "A"), b}, {"Compare", true, 1000, 500});
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find(">A copy<"), std::string::npos);
  EXPECT_NE(svg.find(">A LM<"), std::string::npos);
  EXPECT_NE(svg.find(">B &amp; co copy<"), std::string::npos);
  EXPECT_NE(svg.find("fine 512, coarse 2048<"), std::string::npos);
  EXPECT_NE(svg.find(">training length 1024<"), std::string::npos);
  EXPECT_NE(svg.find(">training length 2048, incomplete<"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"copy-line\""), 2u);
  EXPECT_EQ(count(svg, "class=\"lm-line\""), 2u);
  EXPECT_EQ(count(svg, "stroke-dasharray=\"7,4\""), 2u);  // LM lines dashed
  EXPECT_NE(svg.find("stroke=\"#1f77b4\""), std::string::npos);
  EXPECT_NE(svg.find("stroke=\"#ff7f0e\""), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"region-"), 0u);
  EXPECT_EQ(count(svg, "-band\""), 0u);
  EXPECT_EQ(count(svg, "class=\"failed\""), 1u);

  const std::string censored = compare_svg({finalized({point(64, 1.0, 0.3)}, 0, "C")}, {});
  EXPECT_NE(censored.find("fine &gt; 64, coarse &gt; 64"), std::string::npos);
}

TEST(ForgettingSvg, CompareDegenerateAndManyCurves) {
  EXPECT_TRUE(well_formed(compare_svg({}, {})));
  EXPECT_NE(compare_svg({}, {}).find("no curves"), std::string::npos);
  EXPECT_TRUE(well_formed(compare_svg({finalized({}), finalized({failed_point(10)})}, {"", true, 500, 250})));

  std::vector<Curve> many;
  for (int i = 0; i < 12; ++i) many.push_back(typical_curve(0, "model number " + std::to_string(i)));
  many.push_back(typical_curve(0, "a label much too long to fit into the legend column at all"));
  const std::string svg = compare_svg(many, {});
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(svg.find("height=\"500\""), std::string::npos);  // grown to fit the legend
  EXPECT_NE(svg.find("a label much too long…"), std::string::npos);
  EXPECT_NE(svg.find("<title>a label much too long to fit into the legend column at all copy</title>"),
            std::string::npos);
}

TEST(ForgettingSvg, XmllintAcceptsThePlots) {
  if (std::system("command -v xmllint > /dev/null 2>&1") != 0) GTEST_SKIP() << "xmllint not installed";
  Curve failed = typical_curve(1024, "<script>alert(1)</script>");
  failed.points.push_back(failed_point(8192, "\"quoted\" & <odd>"));
  finalize(failed);
  const std::vector<std::string> svgs = {
      forgetting_svg(typical_curve(), {}),
      forgetting_svg(failed, {"t & 'q'", true, 1000, 500}),
      forgetting_svg(finalized({}), {}),
      compare_svg({typical_curve(1024, "A"), failed}, {}),
      compare_svg({}, {}),
  };
  for (std::size_t i = 0; i < svgs.size(); ++i) {
    const fs::path file = temp_file(std::to_string(i) + ".svg");
    {
      std::ofstream(file) << svgs[i];
    }
    EXPECT_EQ(std::system(("xmllint --noout '" + file.string() + "'").c_str()), 0) << svgs[i];
    fs::remove(file);
  }
}
