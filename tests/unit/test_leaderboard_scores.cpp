// leaderboard/scores.h: aggregation per entry, mean ± std over seeds, the LRA
// average, the exact binomial test behind Path-X FAIL, and the table cells.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "leaderboard/scores.h"
#include "lra/status.h"

using nlohmann::json;
using namespace lra::host;

namespace {

// The fields scoring reads, as lrahost run writes them.
ScoreInput result(const std::string& plugin, const std::string& task, int64_t seed, double accuracy,
                  int64_t test_examples = 1000, const std::string& division = "open", json options = json::object()) {
  json r = {{"division", division},
            {"plugin", {{"name", plugin}, {"version", "1.0.0"}, {"sha256", "ab" + plugin}, {"options", options}}},
            {"task", {{"name", task}, {"examples", {{"test", test_examples}}}}},
            {"seed", seed},
            {"metrics", {{"test_accuracy", accuracy}}},
            {"digest", "sha256:" + plugin + task + std::to_string(seed) + std::to_string(accuracy)}};
  return {plugin + "/" + task + "/seed" + std::to_string(seed) + "/result.json", r};
}

// All five averaged tasks at `acc`, one seed.
std::vector<ScoreInput> five(const std::string& plugin, double acc, const std::string& division = "open") {
  std::vector<ScoreInput> out;
  for (const auto& t : lra_average_tasks()) out.push_back(result(plugin, t, 0, acc, 1000, division));
  return out;
}

std::string error_of(const std::vector<ScoreInput>& in, lra::ErrorKind* kind = nullptr) {
  try {
    aggregate_scores(in);
  } catch (const lra::Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Binomial, MatchesExactValues) {
  // Reference values: sums of exact binomial coefficients (Python fractions).
  EXPECT_NEAR(binomial_upper_tail(8, 10, 0.5), 56.0 / 1024, 1e-15);
  EXPECT_NEAR(binomial_upper_tail(60, 100, 0.5), 0.028443966820490395, 1e-15);
  EXPECT_NEAR(binomial_upper_tail(40, 100, 0.5), 0.9823998998911476, 1e-14);  // the lower-tail branch
  EXPECT_NEAR(binomial_upper_tail(1020, 2000, 0.5), 0.19158842766761874, 1e-12);
  EXPECT_NEAR(binomial_upper_tail(10200, 20000, 0.5), 0.002390444727951322, 1e-13);
  // A far tail keeps its relative precision instead of rounding to 0.
  EXPECT_NEAR(binomial_upper_tail(90, 100, 0.5) / 1.5316450877189926e-17, 1.0, 1e-9);
  EXPECT_NEAR(binomial_upper_tail(10, 10, 0.5), 1.0 / 1024, 1e-16);
  EXPECT_EQ(binomial_upper_tail(0, 10, 0.5), 1.0);
  EXPECT_EQ(binomial_upper_tail(11, 10, 0.5), 0.0);
  EXPECT_NEAR(binomial_upper_tail(3, 10, 0.2), 0.32220047359999987, 1e-14);  // p other than one half
}

TEST(Binomial, IsStableForMillionsOfTrials) {
  // P(X >= n/2) = 1/2 + P(X = n/2)/2, and P(X = n/2) ~ sqrt(2 / (pi n)).
  const int64_t n = 1000000;
  const double half_pmf = std::sqrt(2.0 / (M_PI * n)) / 2;
  EXPECT_NEAR(binomial_upper_tail(n / 2, n, 0.5), 0.5 + half_pmf, 1e-8);
  EXPECT_NEAR(binomial_upper_tail(n / 2 + 1, n, 0.5), 0.5 - half_pmf, 1e-8);
  EXPECT_LT(binomial_upper_tail(n / 2 + 3000, n, 0.5), 1e-9);  // 6 standard deviations
}

TEST(Scores, MeanAndSampleStdOverSeedsInSeedOrder) {
  const auto entries = aggregate_scores({result("transformer", "listops", 2, 0.38), result("transformer", "listops", 0, 0.36),
                                         result("transformer", "listops", 1, 0.37)});
  ASSERT_EQ(entries.size(), 1u);
  const TaskScore& s = entries[0].tasks.at("listops");
  EXPECT_EQ(s.seeds, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(s.accuracies, (std::vector<double>{0.36, 0.37, 0.38}));
  EXPECT_NEAR(s.mean, 0.37, 1e-12);
  EXPECT_NEAR(s.std, 0.01, 1e-12);  // sample std (n - 1)
  EXPECT_EQ(s.test_examples, 3000);
  EXPECT_FALSE(s.fail);  // only pathx can fail
  EXPECT_EQ(format_task_cell(entries[0], "listops"), "37.00 ± 1.00");
  EXPECT_EQ(format_task_cell(entries[0], "text"), "—");
  EXPECT_EQ(entries[0].sources.size(), 3u);
  EXPECT_FALSE(entries[0].lra_average);
  EXPECT_EQ(format_average_cell(entries[0]), "—");
}

TEST(Scores, OneSeedHasNoSpread) {
  const auto entries = aggregate_scores({result("performer", "text", 0, 0.6537)});
  EXPECT_EQ(entries[0].tasks.at("text").std, 0.0);
  EXPECT_EQ(format_task_cell(entries[0], "text"), "65.37");
}

TEST(Scores, GroupsByPluginBuildOptionsAndDivision) {
  std::vector<ScoreInput> in = {result("performer", "listops", 0, 0.3), result("performer", "listops", 1, 0.4),
                                result("performer", "listops", 0, 0.2, 1000, "closed"),
                                result("performer", "listops", 0, 0.1, 1000, "open", {{"features", 64}})};
  auto rebuilt = result("performer", "listops", 0, 0.5);
  rebuilt.result["plugin"]["sha256"] = "other build";
  in.push_back(rebuilt);
  const auto entries = aggregate_scores(in);
  ASSERT_EQ(entries.size(), 4u);
  int closed = 0, with_options = 0;
  for (const auto& e : entries) {
    closed += e.division == "closed";
    with_options += !e.options.empty();
  }
  EXPECT_EQ(closed, 1);
  EXPECT_EQ(with_options, 1);
}

TEST(Scores, LraAverageIsOverTheFiveTasksWithoutPathX) {
  auto in = five("a", 0.6);
  in.push_back(result("a", "pathx", 0, 0.9));  // does not move the average
  auto partial = five("b", 0.9);
  partial.pop_back();  // four tasks: no average
  in.insert(in.end(), partial.begin(), partial.end());
  const auto c = five("c", 0.7);
  in.insert(in.end(), c.begin(), c.end());
  const auto entries = aggregate_scores(in);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].plugin, "c");  // best average first
  EXPECT_NEAR(*entries[0].lra_average, 0.7, 1e-12);
  EXPECT_EQ(entries[1].plugin, "a");
  EXPECT_NEAR(*entries[1].lra_average, 0.6, 1e-12);
  EXPECT_EQ(format_average_cell(entries[1]), "60.00");
  EXPECT_EQ(entries[2].plugin, "b");  // no average: last
  EXPECT_FALSE(entries[2].lra_average);
}

TEST(Scores, PathXFailsUnlessSignificantlyAboveChance) {
  auto score = [](std::vector<ScoreInput> in) { return aggregate_scores(in)[0].tasks.at("pathx"); };
  // 59 of 100 right: p = 0.0443 < 0.05, passes; 58 of 100: p = 0.0666, FAIL.
  EXPECT_FALSE(score({result("m", "pathx", 0, 0.59, 100)}).fail);
  const TaskScore failed = score({result("m", "pathx", 0, 0.58, 100)});
  EXPECT_TRUE(failed.fail);
  EXPECT_NEAR(failed.p_above_chance, 0.06660530960360667, 1e-12);
  // Pooled over seeds: 51% of 1000 twice is 1020 of 2000 (p = 0.19, FAIL); of 10000 twice, p = 0.0024.
  EXPECT_TRUE(score({result("m", "pathx", 0, 0.51, 1000), result("m", "pathx", 1, 0.51, 1000)}).fail);
  const TaskScore passed = score({result("m", "pathx", 0, 0.51, 10000), result("m", "pathx", 1, 0.51, 10000)});
  EXPECT_FALSE(passed.fail);
  EXPECT_NEAR(passed.p_above_chance, 0.002390444727951322, 1e-12);
  // Below chance fails; the same numbers on another task never do.
  EXPECT_TRUE(score({result("m", "pathx", 0, 0.2, 1000)}).fail);
  const auto entries = aggregate_scores({result("m", "pathx", 0, 0.5, 1000), result("m", "image", 0, 0.5, 1000)});
  EXPECT_EQ(format_task_cell(entries[0], "pathx"), "FAIL");
  EXPECT_EQ(format_task_cell(entries[0], "image"), "50.00");
  EXPECT_FALSE(entries[0].tasks.at("image").fail);
}

TEST(Scores, RefusesResultsItCannotScore) {
  lra::ErrorKind kind{};
  auto r = result("m", "listops", 0, 0.5);
  r.result["metrics"].erase("test_accuracy");
  std::string e = error_of({r}, &kind);
  EXPECT_EQ(kind, lra::ErrorKind::data);
  EXPECT_NE(e.find("m/listops/seed0/result.json"), std::string::npos) << e;
  EXPECT_NE(e.find("metrics.test_accuracy"), std::string::npos) << e;

  r = result("m", "listops", 0, 1.5);
  EXPECT_NE(error_of({r}).find("between 0 and 1"), std::string::npos);
  r = result("m", "listops", 0, 0.5);
  r.result["task"].erase("examples");
  EXPECT_NE(error_of({r}).find("task.examples.test"), std::string::npos);
  r = result("m", "listops", 0, 0.5);
  r.result["plugin"]["name"] = 3;
  EXPECT_NE(error_of({r}).find("plugin.name"), std::string::npos);
  EXPECT_THROW(check_score_input(r), lra::Error);
  EXPECT_NO_THROW(check_score_input(result("m", "listops", 0, 0.5)));
}

TEST(Scores, TheSameSeedTwice) {
  const auto a = result("m", "listops", 0, 0.5);
  auto copy = a;
  copy.source = "elsewhere/result.json";
  const auto entries = aggregate_scores({a, copy});  // the same file (digest) twice: once
  EXPECT_EQ(entries[0].tasks.at("listops").accuracies.size(), 1u);
  const auto other = result("m", "listops", 0, 0.6);  // a different run claiming seed 0
  const std::string e = error_of({a, other});
  EXPECT_NE(e.find("both seed 0"), std::string::npos) << e;
}

TEST(Scores, JsonCarriesEverything) {
  const auto entries = aggregate_scores({result("m", "pathx", 3, 0.5, 200), result("m", "pathx", 1, 0.5, 200)});
  const json j = to_json(entries[0]);
  EXPECT_EQ(j["plugin"], "m");
  EXPECT_EQ(j["plugin_version"], "1.0.0");
  EXPECT_EQ(j["plugin_sha256"], "abm");
  EXPECT_EQ(j["division"], "open");
  EXPECT_TRUE(j["lra_average"].is_null());
  EXPECT_EQ(j["sources"].size(), 2u);
  const json& t = j["tasks"]["pathx"];
  EXPECT_EQ(t["seeds"], json({1, 3}));
  EXPECT_EQ(t["test_examples"], 400);
  EXPECT_EQ(t["fail"], true);
  EXPECT_NEAR(t["p_above_chance"].get<double>(), binomial_upper_tail(200, 400, 0.5), 1e-15);
  EXPECT_EQ(t["accuracies"], json({0.5, 0.5}));
  EXPECT_DOUBLE_EQ(t["mean"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(t["std"].get<double>(), 0.0);
}
