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

// The message without its closing advice ("; what to do"), which every
// reading error carries: checked here, so tests can compare the rest exactly.
std::string without_hint(const std::string& message) {
  for (const char* hint : {"; lrahost forget writes this file", "; the reference tool's result file is",
                           "; --compare reads"}) {
    const auto at = message.find(hint);
    if (at != std::string::npos) return message.substr(0, at);
  }
  ADD_FAILURE() << "no advice in: " << message;
  return message;
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

::testing::AssertionResult is(const MemoryLength& m, int64_t value, bool censored) {
  if (m.value == value && m.censored == censored) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got {" << m.value << ", " << (m.censored ? "censored" : "not censored")
                                       << "}, expected {" << value << ", " << (censored ? "censored" : "not censored")
                                       << "}";
}

TEST(ForgettingMemoryLength, EarlyLengthsFailLaterPassHeadlineIsTheLargestThatHolds) {
  // Misses at 8 and 16 (the paper: "except for very short sequences"), holds from 32 to 96, fails at 128.
  const std::vector<CurvePoint> pts = {point(8, 0.95, 0.2),  point(16, 0.98, 0.3),  point(32, 1.0, 0.5),
                                       point(64, 0.995, 0.5), point(96, 0.999, 0.5), point(128, 0.8, 0.795)};
  EXPECT_TRUE(is(fine_length(pts), 96, false));
  EXPECT_TRUE(is(fine_length_prefix(pts), 0, false));  // fails at the first length
  // copy - LM: 0.75, 0.68, 0.5, 0.495, 0.499, 0.005.
  EXPECT_TRUE(is(coarse_length(pts), 96, false));
  EXPECT_TRUE(is(coarse_length_prefix(pts), 96, false));
}

// Issue 48: a length whose repetitions do not support it is no headline. At
// 149 tokens copy beats the LM by 3 points on average, but the four
// repetitions disagree (p = 0.68 in the smoke run that prompted this): printed
// as not significant; at 64 tokens the difference is clear and the p is shown.
TEST(ForgettingMemoryLength, EveryLengthCarriesItsSignificance) {
  Curve noisy;
  noisy.label = "noisy";
  CurvePoint clear;
  clear.length = 64;
  clear.copy_accs = {0.70, 0.72, 0.71, 0.73};
  clear.lm_accs = {0.30, 0.31, 0.29, 0.30};
  CurvePoint unclear;
  unclear.length = 149;
  unclear.copy_accs = {0.50, 0.20, 0.45, 0.25};
  unclear.lm_accs = {0.30, 0.35, 0.28, 0.35};
  noisy.points = {clear, unclear};
  finalize(noisy);
  ASSERT_TRUE(is(noisy.coarse, 149, true));
  EXPECT_GE(noisy.points[1].p_value, kSignificanceLevel);
  const std::string coarse = describe_length(noisy, noisy.coarse);
  EXPECT_EQ(coarse.rfind("not significant: > 149 tokens at p = ", 0), 0u) << coarse;
  EXPECT_NE(coarse.find(">= 0.05 (paired t-test of copy against LM accuracy over 4 repetitions)"), std::string::npos)
      << coarse;
  // Up to 64 the claim is supported: the length and its p.
  noisy.points.pop_back();
  finalize(noisy);
  const std::string sixty_four = describe_length(noisy, noisy.coarse);
  EXPECT_EQ(sixty_four.rfind("> 64 tokens (p = ", 0), 0u) << sixty_four;
  EXPECT_LT(noisy.points[0].p_value, kSignificanceLevel);
  // No length holds: nothing to test. A curve read with means only: said so.
  EXPECT_EQ(describe_length(noisy, MemoryLength{0, false}), "0 tokens");
  Curve means;
  CurvePoint m;
  m.length = 32;
  m.copy_mean = 1.0;
  m.lm_mean = 0.5;
  means.points = {m};
  finalize(means);
  EXPECT_NE(describe_length(means, means.fine).find("significance unknown"), std::string::npos);
}

TEST(ForgettingMemoryLength, FailsAtFirstLengthOnly) {
  const std::vector<CurvePoint> pts = {point(8, 0.975, 0.5), point(16, 1.0, 0.5), point(32, 1.0, 0.5)};
  EXPECT_TRUE(is(fine_length(pts), 32, true));
  EXPECT_TRUE(is(fine_length_prefix(pts), 0, false));
  EXPECT_TRUE(is(coarse_length(pts), 32, true));
  EXPECT_TRUE(is(coarse_length_prefix(pts), 32, true));
}

TEST(ForgettingMemoryLength, HoldsEverywhereIsCensored) {
  const std::vector<CurvePoint> pts = {point(100, 1.0, 0.4), point(200, 0.995, 0.4), point(300, 0.999, 0.4)};
  EXPECT_TRUE(is(fine_length(pts), 300, true));
  EXPECT_TRUE(is(fine_length_prefix(pts), 300, true));
}

TEST(ForgettingMemoryLength, HoldsAtTheLastLengthAfterADipIsCensoredOnlyByTheHeadline) {
  const std::vector<CurvePoint> pts = {point(100, 1.0, 0.4), point(200, 1.0, 0.4), point(300, 0.98, 0.4),
                                       point(400, 1.0, 0.4)};
  EXPECT_TRUE(is(fine_length(pts), 400, true));
  EXPECT_TRUE(is(fine_length_prefix(pts), 200, false));  // needs every shorter length too
}

TEST(ForgettingMemoryLength, NeverHolds) {
  const std::vector<CurvePoint> pts = {point(8, 0.5, 0.5), point(16, 0.6, 0.595)};
  EXPECT_TRUE(is(fine_length(pts), 0, false));
  EXPECT_TRUE(is(coarse_length(pts), 0, false));
  EXPECT_TRUE(is(fine_length_prefix(pts), 0, false));
  EXPECT_TRUE(is(coarse_length_prefix(pts), 0, false));
}

TEST(ForgettingMemoryLength, ThresholdsAreStrict) {
  EXPECT_EQ(fine_length({point(10, 0.99, 0.0)}).value, 0);            // > 0.99, not >=
  EXPECT_EQ(coarse_length({point(10, 0.5, 0.495)}).value, 0);         // 0.5 points apart
  EXPECT_EQ(coarse_length({point(10, 0.5, 0.48)}).value, 10);         // 2 points apart
  EXPECT_EQ(coarse_length({point(10, 0.3, 0.45)}).value, 0);          // LM above copy
  EXPECT_EQ(fine_length_prefix({point(10, 0.99, 0.0)}).value, 0);
  EXPECT_EQ(coarse_length_prefix({point(10, 0.5, 0.495)}).value, 0);
}

TEST(ForgettingMemoryLength, AFailedPointNeverHoldsAndAFailedLastPointNeverCensors) {
  // Holds everywhere measured, but the last length failed: not "> 200", and not "> 300".
  const std::vector<CurvePoint> last = {point(100, 1.0, 0.4), point(200, 1.0, 0.4), failed_point(300)};
  for (auto rule : {fine_length, coarse_length, fine_length_prefix, coarse_length_prefix}) {
    EXPECT_TRUE(is(rule(last), 200, false));
  }
  // A failure in the middle: the headline takes the later lengths that hold (and 300 is
  // the longest tested length, so "> 300"); the prefix rule stops at the failure.
  const std::vector<CurvePoint> mid = {point(100, 1.0, 0.4), failed_point(200), point(300, 1.0, 0.4)};
  EXPECT_TRUE(is(fine_length(mid), 300, true));
  EXPECT_TRUE(is(fine_length_prefix(mid), 100, false));
  // Only the failed point would have been the longest that holds: it does not count.
  const std::vector<CurvePoint> tail = {point(100, 1.0, 0.4), point(200, 0.5, 0.5), failed_point(300)};
  EXPECT_TRUE(is(fine_length(tail), 100, false));
  EXPECT_TRUE(is(coarse_length(tail), 100, false));
  EXPECT_TRUE(is(fine_length({failed_point(100)}), 0, false));
  EXPECT_TRUE(is(fine_length_prefix({failed_point(100)}), 0, false));
}

TEST(ForgettingMemoryLength, NoPoints) {
  for (auto rule : {fine_length, coarse_length, fine_length_prefix, coarse_length_prefix}) {
    EXPECT_TRUE(is(rule({}), 0, false));
  }
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
  EXPECT_TRUE(is(c.fine, 10, false));
  EXPECT_TRUE(is(c.coarse, 10, false));
  EXPECT_TRUE(is(c.fine_prefix, 10, false));
  EXPECT_TRUE(is(c.coarse_prefix, 10, false));

  c.points.pop_back();
  finalize(c);
  EXPECT_TRUE(c.complete);
  EXPECT_TRUE(c.fine.censored);
  EXPECT_TRUE(c.fine_prefix.censored);

  // A point with means but no accuracy lists (a reference-tool file may hold such) keeps its means.
  CurvePoint means_only;
  means_only.length = 30;
  means_only.copy_mean = 0.5;
  means_only.lm_mean = 0.2;
  c.points.push_back(means_only);
  finalize(c);
  EXPECT_DOUBLE_EQ(c.points[1].copy_mean, 0.5);
  EXPECT_TRUE(is(c.fine, 10, false));
  EXPECT_TRUE(is(c.coarse, 30, true));

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
  EXPECT_EQ(summary["fine_length_prefix"], 512);
  EXPECT_EQ(summary["fine_length_prefix_censored"], false);
  EXPECT_EQ(summary["coarse_length_prefix"], 2048);
  EXPECT_EQ(summary["coarse_length_prefix_censored"], false);
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
  EXPECT_TRUE(is(back.fine_prefix, c.fine_prefix.value, c.fine_prefix.censored));
  EXPECT_TRUE(is(back.coarse_prefix, c.coarse_prefix.value, c.coarse_prefix.censored));
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
    return without_hint(error_of([&] { curve_from_json(doc, "a.json"); }, lra::ErrorKind::data));
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
            "a.json: points[2].length: 100 does not exceed the previous length 512 (lengths must ascend)");
  EXPECT_EQ(message([](json& d) { d["points"][0].erase("length"); }), "a.json: points[0].length: missing");
  EXPECT_EQ(message([](json& d) { d["points"][1]["lm_accs"] = {0.5}; }),
            "a.json: points[1].lm_accs: 1 values, but copy_accs has 3");
  EXPECT_EQ(message([](json& d) { d["configuration"]["train_length"] = "1k"; }),
            "a.json: configuration.train_length: expected an integer, got \"1k\"");
  EXPECT_EQ(message([](json& d) { d.erase("label"); }), "a.json: label: missing");
  EXPECT_EQ(without_hint(error_of([] { curve_from_json(json::array(), "a.json"); }, lra::ErrorKind::data)),
            "a.json: expected a JSON object, got []");
}

TEST(ForgettingJson, StoredLengthsThatDifferFromTheRecomputedOnesAreNoted) {
  const Curve c = typical_curve();
  const json doc = document(c);
  EXPECT_TRUE(stored_length_notes(doc, c, "a.json").empty());

  json edited = doc;
  edited["fine_length"] = 999;
  edited["coarse_length_prefix_censored"] = true;
  auto notes = stored_length_notes(edited, c, "a.json");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("a.json: "), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("fine_length 999, recomputed 512"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("coarse_length_prefix > 2048, recomputed 2048"), std::string::npos) << notes[0];
  EXPECT_EQ(notes[0].find("prefix rule's"), std::string::npos) << notes[0];

  edited = doc;
  edited["fine_length"] = "lots";
  notes = stored_length_notes(edited, c, "a.json");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("fine_length \"lots\" is not a length, recomputed 512"), std::string::npos) << notes[0];

  // A file from before the Table 3 rule: no *_prefix fields, headline fields hold the prefix values.
  const Curve late = finalized({point(8, 0.95, 0.5), point(16, 1.0, 0.5), point(32, 0.5, 0.5)});
  json old = document(late);
  for (const char* key : {"fine_length_prefix", "fine_length_prefix_censored", "coarse_length_prefix",
                          "coarse_length_prefix_censored"}) {
    old.erase(key);
  }
  old["fine_length"] = 0;
  old["fine_length_censored"] = false;
  notes = stored_length_notes(old, late, "old.json");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("fine_length 0, recomputed 16"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("the stored values are the prefix rule's"), std::string::npos) << notes[0];
}

TEST(ForgettingJson, LoadCurveFile) {
  const fs::path file = temp_file("curve.json");
  {
    std::ofstream(file) << document(typical_curve()).dump();
  }
  const LoadedCurve loaded = load_curve_file(file);
  EXPECT_EQ(loaded.format, "forgetting.json");
  EXPECT_EQ(loaded.curve.label, "model");  // the document's label, not the file name
  EXPECT_EQ(loaded.curve.coarse.value, 2048);
  EXPECT_TRUE(loaded.notes.empty());

  {
    std::ofstream(file) << "{\"schema\": ";
  }
  const std::string bad = error_of([&] { load_curve_file(file); }, lra::ErrorKind::data);
  EXPECT_NE(bad.find(file.string() + ": not valid JSON"), std::string::npos) << bad;
  {
    std::ofstream(file) << "42";
  }
  EXPECT_EQ(without_hint(error_of([&] { load_curve_file(file); }, lra::ErrorKind::data)),
            file.string() + ": expected a JSON list or object, got 42");
  fs::remove(file);

  const std::string missing = error_of([&] { load_curve_file(file); }, lra::ErrorKind::data);
  EXPECT_NE(missing.find(file.string()), std::string::npos) << missing;
}

// --- the reference tool's result file -------------------------------------------

const fs::path kLlama3 = fs::path(LRA_SOURCE_DIR) / "tests/fixtures/forgetting/Meta-Llama-3-8B.json";

TEST(ForgettingReference, PublishedLlama3CurveGivesTable3Lengths) {
  const LoadedCurve loaded = load_curve_file(kLlama3);
  const Curve& c = loaded.curve;
  EXPECT_EQ(loaded.format, "reference tool");
  EXPECT_EQ(c.label, "Meta-Llama-3-8B");  // the file name's stem
  EXPECT_EQ(c.train_length, 0);
  EXPECT_TRUE(c.complete);
  ASSERT_EQ(c.points.size(), 19u);
  EXPECT_EQ(c.points.front().length, 8);
  EXPECT_EQ(c.points.back().length, 9293);
  // docs/forgetting.md, "The memory lengths", and the paper's Table 3 ("4k", "> 9k").
  EXPECT_TRUE(is(c.fine, 4134, false));
  EXPECT_TRUE(is(c.coarse, 9293, true));
  // The prefix rule misses at L = 8 (copy accuracy 0.95): fine 0, which Table 3 contradicts.
  EXPECT_TRUE(is(c.fine_prefix, 0, false));
  EXPECT_TRUE(is(c.coarse_prefix, 9293, true));
  EXPECT_TRUE(loaded.notes.empty());

  // Our statistics, recomputed from the accuracy lists, reproduce the tool's numpy/scipy values.
  const json doc = json::parse(std::ifstream(kLlama3));
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    const CurvePoint& p = c.points[i];
    EXPECT_NEAR(p.copy_mean, doc[i]["copy_mean"].get<double>(), 1e-12) << p.length;
    EXPECT_NEAR(p.lm_std, doc[i]["lm_std"].get<double>(), 1e-12) << p.length;
    const double tool_p = doc[i]["p_value"].get<double>();
    EXPECT_NEAR(p.p_value, tool_p, 1e-6 * tool_p) << p.length;
  }
}

TEST(ForgettingReference, OnlyLengthAndTheMeansAreRequired) {
  const json doc = json::parse(R"([{"length": 8, "copy_mean": 1.0, "lm_mean": 0.2, "title": "extra"},
                                   {"length": 16, "copy_mean": 0.5, "lm_mean": 0.25, "copy_std": 0.1}])");
  const Curve c = curve_from_reference_json(doc, "r.json", "r");
  ASSERT_EQ(c.points.size(), 2u);
  EXPECT_DOUBLE_EQ(c.points[1].copy_mean, 0.5);
  EXPECT_DOUBLE_EQ(c.points[1].copy_std, 0.1);
  EXPECT_DOUBLE_EQ(c.points[1].lm_std, 0.0);
  EXPECT_DOUBLE_EQ(c.points[1].p_value, 1.0);
  EXPECT_TRUE(is(c.fine, 8, false));
  EXPECT_TRUE(is(c.coarse, 16, true));
}

TEST(ForgettingReference, ErrorsNameFileElementAndField) {
  const json good = json::parse(std::ifstream(kLlama3));
  auto message = [&](auto edit) {
    json doc = good;
    edit(doc);
    const std::string m = error_of([&] { curve_from_reference_json(doc, "ref.json", "ref"); }, lra::ErrorKind::data);
    EXPECT_NE(m.find("; the reference tool's result file is a JSON list"), std::string::npos) << m;
    return without_hint(m);
  };
  EXPECT_EQ(message([](json& d) { d = json::array(); }), "ref.json: the list is empty: no tested lengths");
  EXPECT_EQ(message([](json& d) { d = json::object(); }), "ref.json: expected a JSON list, got {}");
  EXPECT_EQ(message([](json& d) { d[4] = 3; }), "ref.json: [4]: expected an object, got 3");
  EXPECT_EQ(message([](json& d) { d[2].erase("copy_mean"); }), "ref.json: [2].copy_mean: missing");
  EXPECT_EQ(message([](json& d) { d[2].erase("lm_mean"); }), "ref.json: [2].lm_mean: missing");
  EXPECT_EQ(message([](json& d) { d[0].erase("length"); }), "ref.json: [0].length: missing");
  EXPECT_EQ(message([](json& d) { d[0]["length"] = "8"; }), "ref.json: [0].length: expected an integer, got \"8\"");
  EXPECT_EQ(message([](json& d) { d[0]["length"] = 8.5; }), "ref.json: [0].length: expected an integer, got 8.5");
  EXPECT_EQ(message([](json& d) { d[0]["length"] = 0; }), "ref.json: [0].length: 0 is not positive");
  EXPECT_EQ(message([](json& d) { d[5]["length"] = 1039; }),
            "ref.json: [5].length: 1039 does not exceed the previous length 2071 (lengths must ascend)");
  EXPECT_EQ(message([](json& d) { d[1]["copy_mean"] = 1.2; }), "ref.json: [1].copy_mean: 1.2 is not in [0, 1]");
  EXPECT_EQ(message([](json& d) { d[1]["lm_mean"] = -0.1; }), "ref.json: [1].lm_mean: -0.1 is not in [0, 1]");
  EXPECT_EQ(message([](json& d) { d[1]["lm_mean"] = nullptr; }),
            "ref.json: [1].lm_mean: expected a number, got null");
  EXPECT_EQ(message([](json& d) { d[3]["copy_accs"][7] = -0.25; }),
            "ref.json: [3].copy_accs[7]: -0.25 is not in [0, 1]");
  EXPECT_EQ(message([](json& d) { d[3]["lm_accs"] = json::array(); }),
            "ref.json: [3].lm_accs: expected a non-empty array of accuracies, got []");
  EXPECT_EQ(message([](json& d) { d[3]["lm_accs"].erase(0); }), "ref.json: [3].lm_accs: 9 values, but copy_accs has 10");
  EXPECT_EQ(message([](json& d) { d[6].erase("lm_accs"); }),
            "ref.json: [6].lm_accs: missing, though copy_accs is present (give both or neither)");
  EXPECT_EQ(message([](json& d) { d[6].erase("copy_accs"); }),
            "ref.json: [6].copy_accs: missing, though lm_accs is present (give both or neither)");
  EXPECT_EQ(message([](json& d) { d[0]["copy_mean"] = 0.9; }),
            "ref.json: [0].copy_mean: 0.9 differs from the mean of copy_accs, 0.95");
  EXPECT_EQ(message([](json& d) { d[7]["lm_std"] = -1; }), "ref.json: [7].lm_std: -1 is negative");
  EXPECT_EQ(message([](json& d) { d[7]["p_value"] = 2; }), "ref.json: [7].p_value: 2 is not in [0, 1]");
  EXPECT_EQ(message([](json& d) { d[7]["normality"] = true; }), "ref.json: [7].normality: expected an object, got true");
  EXPECT_EQ(message([](json& d) { d[7]["normality"]["variance_homogeneity"] = "no"; }),
            "ref.json: [7].normality.variance_homogeneity: expected true or false, got \"no\"");
}

TEST(ForgettingReference, PythonsNaNAndInfinityAreNamedAtTheirField) {
  const fs::path file = temp_file("nan.json");
  auto load_error = [&](const std::string& text) {
    {
      std::ofstream(file) << text;
    }
    return without_hint(error_of([&] { load_curve_file(file); }, lra::ErrorKind::data));
  };
  const std::string ok = R"({"length": 8, "copy_mean": 1.0, "lm_mean": 0.5, "note": "NaN \"Infinity\" -Infinity"})";
  EXPECT_EQ(load_error("[" + ok + R"(, {"length": 16, "copy_mean": 0.5, "lm_mean": 0.5,
                       "copy_accs": [NaN, 0.5], "lm_accs": [0.5, 0.5]}])"),
            file.string() + ": [1].copy_accs[0]: expected a number, got NaN (Python's json writes it; JSON has none)");
  EXPECT_EQ(load_error("[" + ok + R"(, {"length": 16, "copy_mean": 0.5, "lm_mean": -Infinity}])"),
            file.string() + ": [1].lm_mean: expected a number, got -Infinity (Python's json writes it; JSON has none)");
  EXPECT_EQ(load_error(R"([{"length": 8, "copy_mean": Infinity, "lm_mean": 0.5}])"),
            file.string() + ": [0].copy_mean: expected a number, got Infinity (Python's json writes it; JSON has none)");
  // The same words inside strings are text, not numbers.
  {
    std::ofstream(file) << "[" + ok + "]";
  }
  EXPECT_TRUE(is(load_curve_file(file).curve.fine, 8, true));
  fs::remove(file);
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
  // At 2048 copy beats the LM by 0.21 on average over three disagreeing
  // repetitions: p = 0.055, so the legend marks the length not significant.
  EXPECT_NE(svg.find("coarse-grained: 2048 n.s.<"), std::string::npos);
  EXPECT_NE(svg.find(">prefix rule: fine 512<"), std::string::npos);
  EXPECT_NE(svg.find(">prefix rule: coarse 2048 n.s.<"), std::string::npos);
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
  EXPECT_NE(censored.find("prefix rule: fine &gt; 128<"), std::string::npos);
}

TEST(ForgettingSvg, PhasesStopAtTheFirstFailureThoughTheHeadlineGoesBeyond) {
  // Fine holds at 64, 128 and 512 (so headline "> 512"), 256 failed: shade only 64 ... 128.
  const Curve c = finalized({point(64, 1.0, 0.3), point(128, 1.0, 0.3), failed_point(256), point(512, 1.0, 0.3)});
  ASSERT_TRUE(is(c.fine, 512, true));
  const std::string svg = forgetting_svg(c, {"", false, 1000, 500});
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find("fine-grained: &gt; 512<"), std::string::npos);
  EXPECT_NE(svg.find("prefix rule: fine 128<"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"region-coarse\""), 0u);
  EXPECT_EQ(count(svg, "class=\"region-amnesia\""), 0u);
  // The fine region ends at the x of 128, left of the marker at 512.
  auto number_after = [&](std::size_t from, const std::string& attr) {
    const auto at = svg.find(attr + "=\"", from) + attr.size() + 2;
    return std::stod(svg.substr(at, svg.find('"', at) - at));
  };
  const auto region = svg.find("class=\"region-fine\"");
  ASSERT_NE(region, std::string::npos);
  const double region_end = number_after(region, "x") + number_after(region, "width");
  double rightmost_marker = 0;
  for (auto at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) {
    rightmost_marker = std::max(rightmost_marker, number_after(at, "cx"));
  }
  EXPECT_LT(region_end + 100, rightmost_marker);
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
  EXPECT_NE(svg.find("fine 512, coarse 2048 n.s.<"), std::string::npos);
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
