// The leaderboard's sections for the suites other than LRA (MQAR, MAD):
// entries per plugin build, options and model point; the training point
// chosen on validation (runs/suite_grid.h); MAD's mean over settings and
// tasks; their results kept out of LRA's tables; the three outputs.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "common/sha256.h"
#include "leaderboard/board.h"
#include "leaderboard/site.h"
#include "leaderboard/suite_sections.h"
#include "lra/status.h"
#include "manifest/suites.h"
#include "results/result.h"
#include "leaderboard_result.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace lra::host;

namespace {

std::vector<OfficialManifest> lra_official(const std::string& task) {
  const auto& tasks = lra_task_order();
  if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) return {};
  return {{"lra-v1.1", sha256_hex("official " + task), "", ""}};
}

std::optional<std::vector<int64_t>> two_seeds(const std::string&, const std::string&) {
  return std::vector<int64_t>{0, 1};
}

// A complete, valid result as lrahost run writes it (unsealed); open unless `closed`.
json run_result(const std::string& plugin, const std::string& task, int64_t seed, double test, double val,
                bool closed = false) {
  return lra::test::leaderboard_result(plugin, task, seed, test, val, closed);
}

// An MQAR run at one point of Zoology's grid (widths x learning rates), its
// state measured at two lengths (bytes grow with the width).
json mqar_run(const std::string& plugin, int64_t width, double lr, double test, double val, int64_t seed = 0) {
  json r = run_result(plugin, "mqar", seed, test, val);
  r["task"]["manifest"] = "builtin:smoke/mqar.toml";
  r["config"] = {{"grid", {{"model.d_model", {64, 128}}, {"train.lr", {0.001, 0.01}}}},
                 {"model", {{"d_model", width}, {"layers", 2}}},
                 {"train", {{"lr", lr}, {"steps", 3000}}}};
  r["state_size"] = {{"measured", true},
                     {"method", "test"},
                     {"per_length", {{{"length", 64}, {"bytes", 512 * width}}, {{"length", 1024}, {"bytes", 8192 * width}}}}};
  return r;
}

// A MAD run: one setting of one task, at MAD's learning rate x weight decay grid.
json mad_run(const std::string& task, const std::string& setting, double wd, double test, double val,
             const std::string& plugin = "hyena") {
  json r = run_result(plugin, task, 0, test, val);
  r["config"] = {{"grid", {{"train.weight_decay", {0.0, 0.1}}}},
                 {"model", {{"d_model", 64}}},
                 {"train", {{"lr", 0.001}, {"weight_decay", wd}}}};
  if (!setting.empty()) r["config"]["setting"] = setting;
  r["state_size"] = {{"measured", false}, {"why", "hyena has no decoding steps"}};
  r["digest"] = sha256_hex(task + setting + std::to_string(wd) + std::to_string(test));
  return r;
}

ScoreInput in(const json& r, const std::string& name) { return {name + "/result.json", r}; }

const SuiteEntry* find_model(const std::vector<SuiteEntry>& entries, const std::string& model) {
  for (const auto& e : entries)
    if (e.model == model) return &e;
  return nullptr;
}

class Suites : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lra-test-suites-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const json& r) { return write_result(dir_ / name, seal(r)); }

  // One plugin's MQAR sweep: at width 64 lr 0.001 wins on validation though
  // lr 0.01 tests better; at width 128 lr 0.01 wins on validation though lr
  // 0.001 tests better.
  std::vector<fs::path> mqar_sweep(const std::string& plugin) {
    return {write(plugin + "/d64-lr0.001", mqar_run(plugin, 64, 0.001, 0.70, 0.80)),
            write(plugin + "/d64-lr0.01", mqar_run(plugin, 64, 0.01, 0.90, 0.60)),
            write(plugin + "/d128-lr0.001", mqar_run(plugin, 128, 0.001, 0.95, 0.50)),
            write(plugin + "/d128-lr0.01", mqar_run(plugin, 128, 0.01, 0.85, 0.90))};
  }

  fs::path dir_;
};

}  // namespace

TEST(SuiteOfTask, OfficialTasksAndTheSuitesOrder) {
  ASSERT_NE(suite_of_task("listops"), nullptr);
  EXPECT_EQ(suite_of_task("listops")->name, "lra");
  ASSERT_NE(suite_of_task("mqar"), nullptr);
  EXPECT_EQ(suite_of_task("mqar")->name, "mqar");
  // MAD's tasks belong to MAD by its order list, with or without mad-v1 manifests.
  for (const auto& t : find_suite("mad").order) {
    ASSERT_NE(suite_of_task(t), nullptr) << t;
    EXPECT_EQ(suite_of_task(t)->name, "mad") << t;
  }
  EXPECT_EQ(suite_of_task("forgetting"), nullptr);
  EXPECT_EQ(suite_of_task("my_own_task"), nullptr);
  EXPECT_EQ(suite_task_columns(find_suite("mad")), find_suite("mad").order);
  EXPECT_EQ(suite_task_columns(find_suite("mqar")), std::vector<std::string>{"mqar"});
}

// (1) One entry per width; each chooses the learning rate on validation accuracy, never on test.
TEST_F(Suites, MqarChoosesTheLearningRateOnValidationPerWidth) {
  const Leaderboard board = build_leaderboard(mqar_sweep("linear_transformer"), {}, lra_official, two_seeds);
  EXPECT_TRUE(board.invalid.empty()) << board.invalid[0].reasons[0];
  ASSERT_EQ(board.suites.size(), 2u);  // every suite but LRA, in suite_defs() order
  EXPECT_EQ(board.suites[0].suite, "mqar");
  EXPECT_EQ(board.suites[0].protocol, "zoology-v1");
  EXPECT_EQ(board.suites[1].suite, "mad");
  EXPECT_TRUE(board.suites[1].empty());
  const auto& open = board.suites[0].open;
  ASSERT_EQ(open.size(), 2u);
  EXPECT_TRUE(board.suites[0].closed.empty());

  // Ranked by score: width 128 (85%) before width 64 (70%).
  EXPECT_EQ(open[0].model, "d_model 128");
  EXPECT_EQ(open[1].model, "d_model 64");
  const SuiteTaskScore& w128 = open[0].tasks.at("mqar");
  ASSERT_TRUE(w128.score);
  EXPECT_DOUBLE_EQ(*w128.score, 0.85) << "lr 0.01 has the best validation accuracy; lr 0.001's 95% test does not count";
  EXPECT_EQ(w128.chosen, "lr 0.01");
  EXPECT_EQ(w128.settings, 1);
  EXPECT_EQ(w128.seeds, std::vector<int64_t>{0});
  ASSERT_EQ(w128.chosen_sources.size(), 1u);
  EXPECT_NE(w128.chosen_sources[0].find("d128-lr0.01"), std::string::npos);
  EXPECT_EQ(w128.state_length, 1024);  // the longest length measured
  EXPECT_EQ(w128.state_bytes, 8192 * 128);
  EXPECT_EQ(w128.state_note, "");
  const SuiteTaskScore& w64 = open[1].tasks.at("mqar");
  EXPECT_DOUBLE_EQ(*w64.score, 0.70) << "lr 0.001 has the best validation accuracy; lr 0.01's 90% test does not count";
  EXPECT_EQ(w64.chosen, "lr 0.001");
  // MQAR's one task: the suite's score is the task's.
  EXPECT_DOUBLE_EQ(*open[0].score, 0.85);
  EXPECT_DOUBLE_EQ(*open[1].score, 0.70);
  EXPECT_EQ(suite_ranks(open), (std::vector<std::optional<int>>{1, 2}));
  // Each width's entry holds all its results (both learning rates), each one checked.
  EXPECT_EQ(open[0].entry.sources.size(), 2u);
  EXPECT_EQ(open[0].entry.checks.results, 2);
  EXPECT_EQ(open[0].entry.made_with, "preset smoke");
}

// (2) MAD: a task's score is the mean over its settings of the chosen test
// accuracy; the suite's score only when all six tasks have one.
TEST(SuiteEntries, MadMeansOverSettingsAndNeedsAllSixTasks) {
  const SuiteDef& mad = find_suite("mad");
  std::vector<ScoreInput> results;
  // Recall at two settings, each with its own winner on validation: 0.6 and 0.8 -> 0.7.
  results.push_back(in(mad_run("mad_recall", "", 0.0, 0.60, 0.70), "r/base/wd0"));
  results.push_back(in(mad_run("mad_recall", "", 0.1, 0.99, 0.50), "r/base/wd0.1"));
  results.push_back(in(mad_run("mad_recall", "vocab_size=32", 0.0, 0.10, 0.20), "r/v32/wd0"));
  results.push_back(in(mad_run("mad_recall", "vocab_size=32", 0.1, 0.80, 0.90), "r/v32/wd0.1"));
  const std::vector<std::string> others = {"mad_fuzzy_recall", "mad_noisy_recall", "mad_selective_copy",
                                           "mad_compression"};
  for (const auto& t : others) results.push_back(in(mad_run(t, "", 0.0, 0.50, 0.50), t));

  auto entries = aggregate_suite_entries(mad, results);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].model, "") << "MAD's grid has no model axis";
  const SuiteTaskScore& recall = entries[0].tasks.at("mad_recall");
  ASSERT_TRUE(recall.score);
  EXPECT_NEAR(*recall.score, 0.70, 1e-12);
  EXPECT_EQ(recall.settings, 2);
  EXPECT_EQ(recall.chosen, "weight_decay 0; vocab_size=32: weight_decay 0.1");
  EXPECT_EQ(recall.chosen_sources.size(), 2u);
  EXPECT_FALSE(recall.state_bytes);
  EXPECT_EQ(recall.state_note, "not measured: hyena has no decoding steps");
  EXPECT_FALSE(entries[0].score) << "five of six tasks: no MAD score";
  EXPECT_EQ(suite_score_cell(entries[0].score), "—");
  EXPECT_EQ(suite_ranks(entries), std::vector<std::optional<int>>{std::nullopt});

  results.push_back(in(mad_run("mad_memorization", "", 0.0, 0.20, 0.30), "mem"));
  entries = aggregate_suite_entries(mad, results);
  ASSERT_EQ(entries.size(), 1u);
  ASSERT_TRUE(entries[0].score);
  EXPECT_NEAR(*entries[0].score, (0.70 + 4 * 0.50 + 0.20) / 6, 1e-12);
  EXPECT_EQ(suite_score_cell(entries[0].score), "48.33");

  // A setting without a finished run (no validation accuracy): the task, and so MAD, has no score.
  json unfinished = mad_run("mad_memorization", "vocab_size=64", 0.0, 0.9, 0.9);
  unfinished["metrics"].erase("best_val_accuracy");
  results.push_back(in(unfinished, "mem-unfinished"));
  entries = aggregate_suite_entries(mad, results);
  EXPECT_EQ(entries[0].tasks.at("mad_memorization").settings, 2);
  EXPECT_FALSE(entries[0].tasks.at("mad_memorization").score);
  EXPECT_FALSE(entries[0].score);
}

// (3) Suite results never reach LRA's tables or task columns; LRA's entries are as before.
TEST_F(Suites, SuiteResultsStayOutOfLrasTables) {
  std::vector<fs::path> lra_only;
  for (const auto& t : lra_average_tasks())
    for (int seed : {0, 1}) {
      json r = run_result("transformer", t, seed, 0.6 + 0.02 * seed, 0.6, true);
      lra_only.push_back(write("lra/" + t + "/" + std::to_string(seed), r));
    }
  lra_only.push_back(write("lra/open/listops", run_result("transformer", "listops", 0, 0.3, 0.3)));
  std::vector<fs::path> files = lra_only;
  for (const auto& f : mqar_sweep("transformer")) files.push_back(f);
  files.push_back(write("mad/recall", mad_run("mad_recall", "", 0.0, 0.5, 0.5, "transformer")));

  const Leaderboard without = build_leaderboard(lra_only, {}, lra_official, two_seeds);
  const Leaderboard board = build_leaderboard(files, {}, lra_official, two_seeds);
  EXPECT_EQ(board.task_columns, lra_task_order()) << "no mqar or mad_* column";
  ASSERT_EQ(board.closed.size(), 1u);
  ASSERT_EQ(board.open.size(), 1u) << "only the open listops run: the suites' runs are elsewhere";
  EXPECT_EQ(to_json(board.closed[0]), to_json(without.closed[0]));
  EXPECT_EQ(to_json(board.open[0]), to_json(without.open[0]));
  EXPECT_EQ(board.open[0].tasks.size(), 1u);
  EXPECT_EQ(board.suites[0].open.size(), 2u);
  EXPECT_EQ(board.suites[1].open.size(), 1u);
  const json j = leaderboard_json(board);
  EXPECT_EQ(j["tasks"], json(lra_task_order()));
  for (const char* division : {"closed", "open"})
    for (const auto& e : j[division])
      for (const auto& [task, score] : e["tasks"].items()) EXPECT_EQ(suite_of_task(task)->name, "lra") << task;
  // LRA's open table has its columns only.
  const std::string html = leaderboard_html(board);
  const auto open_table = html.find("id=\"open-table\"");
  const std::string lra_open = html.substr(open_table, html.find("</table>", open_table) - open_table);
  EXPECT_EQ(lra_open.find("mqar"), std::string::npos);
  EXPECT_EQ(lra_open.find("mad_recall"), std::string::npos);
}

// (4) Two different runs of one entry, task, setting, point and seed are refused; the same file twice counts once.
TEST_F(Suites, TheSameSeedAtTheSamePointTwiceIsRefused) {
  const SuiteDef& mqar = find_suite("mqar");
  const json a = seal(mqar_run("local", 64, 0.01, 0.5, 0.5));
  const json b = seal(mqar_run("local", 64, 0.01, 0.6, 0.6));
  try {
    aggregate_suite_entries(mqar, {in(a, "runs/a"), in(b, "runs/b")});
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::data);
    const std::string what = e.what();
    EXPECT_NE(what.find("runs/a/result.json"), std::string::npos) << what;
    EXPECT_NE(what.find("runs/b/result.json"), std::string::npos) << what;
    EXPECT_NE(what.find("both seed 0"), std::string::npos) << what;
    EXPECT_NE(what.find("model.d_model=64 train.lr=0.01"), std::string::npos) << what;
  }
  // The same file (digest) twice: once.
  auto entries = aggregate_suite_entries(mqar, {in(a, "runs/a"), in(a, "copy/a")});
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].entry.sources.size(), 1u);
  // The same seed at another learning rate, or another seed at the same point: the grid, not a duplicate.
  entries = aggregate_suite_entries(mqar, {in(a, "runs/a"), in(seal(mqar_run("local", 64, 0.001, 0.9, 0.55)), "runs/c"),
                                          in(seal(mqar_run("local", 64, 0.01, 0.7, 0.7, 1)), "runs/d")});
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].tasks.at("mqar").seeds, (std::vector<int64_t>{0, 1})) << "lr 0.01: seeds 0 and 1";
  EXPECT_NEAR(*entries[0].score, 0.6, 1e-12) << "lr 0.01: mean validation 0.6 over its two seeds beats lr 0.001's 0.55";
  EXPECT_EQ(entries[0].tasks.at("mqar").chosen, "lr 0.01");
  // Through the leaderboard: exit 5 (data) naming both files, nothing scored.
  const auto fa = write("a", mqar_run("local", 64, 0.01, 0.5, 0.5)), fb = write("b", mqar_run("local", 64, 0.01, 0.6, 0.6));
  try {
    build_leaderboard({fa, fb}, {}, lra_official, two_seeds);
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find(fa.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fb.string()), std::string::npos) << e.what();
  }
}

// A grid axis the result's config does not hold is refused, naming the file and member.
TEST(SuiteEntries, AGridAxisWithoutItsValueIsRefused) {
  json r = mqar_run("local", 64, 0.01, 0.5, 0.5);
  r["config"]["model"].erase("d_model");
  try {
    aggregate_suite_entries(find_suite("mqar"), {in(r, "x")});
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find("x/result.json: config.model.d_model"), std::string::npos) << e.what();
  }
}

// (5) index.html, leaderboard.md and leaderboard.json each have the sections; baselines go to their suite's.
TEST_F(Suites, EveryOutputHasTheSections) {
  auto files = mqar_sweep("linear_transformer");
  json unmeasured = mqar_run("s4d", 64, 0.01, 0.4, 0.4);
  unmeasured["state_size"] = {{"measured", false}, {"why", "<b>no decode_step</b>"}};
  files.push_back(write("s4d", unmeasured));
  BaselineInputs baselines{{write("base/mqar", mqar_run("transformer", 64, 0.01, 0.99, 0.99))}, {"transformer", "local"}};
  Leaderboard board = build_leaderboard(files, {}, lra_official, two_seeds, {}, baselines);
  board.title = "t";
  board.generator = "g";
  ASSERT_EQ(board.suites[0].open_baselines.size(), 1u);
  EXPECT_TRUE(board.open_baselines.empty()) << "an MQAR baseline is not one of LRA's";

  const std::string html = leaderboard_html(board);
  EXPECT_NE(html.find("<h2>MQAR (zoology-v1)</h2>"), std::string::npos);
  EXPECT_EQ(html.find("MAD (mad-v1)"), std::string::npos) << "a suite without results has no section";
  const auto table = html.find("id=\"mqar-open-table\"");
  ASSERT_NE(table, std::string::npos);
  const std::string t = html.substr(table, html.find("</table>", table) - table);
  EXPECT_NE(t.find(">Model point</th>"), std::string::npos);
  EXPECT_NE(t.find("<td class=\"text\" data-sort=\"d_model 128\">d_model 128</td>"), std::string::npos) << t;
  EXPECT_NE(t.find("<td data-sort=\"85.000000\">85.00<div class=\"meta\">lr 0.01 · 1 setting · 1 seed · 1.05 MB at "
                   "length 1024</div></td>"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("not measured: &lt;b&gt;no decode_step&lt;/b&gt;"), std::string::npos) << "escaped";
  EXPECT_EQ(t.find("<b>no"), std::string::npos);
  EXPECT_LT(t.find("d_model 128"), t.find("d_model 64")) << "ranked by score";
  EXPECT_NE(t.find("<tr class=\"baseline\""), std::string::npos);
  EXPECT_NE(html.find("id=\"mqar-closed\""), std::string::npos);

  const std::string md = leaderboard_markdown(board);
  EXPECT_NE(md.find("## MQAR (zoology-v1)"), std::string::npos) << md;
  EXPECT_NE(md.find("| rank | plugin | options | model point | mqar | Score |"), std::string::npos) << md;
  EXPECT_NE(md.find("| d_model 128 | 85.00 (lr 0.01 · 1 setting · 1 seed · 1.05 MB at length 1024) | 85.00 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| baseline | transformer"), std::string::npos) << md;

  const json j = json::parse(leaderboard_json(board).dump());
  ASSERT_EQ(j["suites"].size(), 2u);
  const json& s = j["suites"][0];
  EXPECT_EQ(s["suite"], "mqar");
  EXPECT_EQ(s["protocol"], "zoology-v1");
  EXPECT_EQ(s["tasks"], json({"mqar"}));
  ASSERT_EQ(s["open"].size(), 3u);
  const json& e = s["open"][0];
  EXPECT_EQ(e["plugin"], "linear_transformer");
  EXPECT_EQ(e["model"], "d_model 128");
  EXPECT_EQ(e["division"], "open");
  EXPECT_EQ(e["made_with"], "preset smoke");
  EXPECT_EQ(e["rank"], 1);
  EXPECT_DOUBLE_EQ(e["score"].get<double>(), 0.85);
  EXPECT_DOUBLE_EQ(e["tasks"]["mqar"]["score"].get<double>(), 0.85);
  EXPECT_EQ(e["tasks"]["mqar"]["settings"], 1);
  EXPECT_EQ(e["tasks"]["mqar"]["seeds"], 1);
  EXPECT_EQ(e["tasks"]["mqar"]["state_bytes"], 8192 * 128);
  EXPECT_EQ(e["tasks"]["mqar"]["state_length"], 1024);
  EXPECT_EQ(e["sources"].size(), 2u);
  EXPECT_FALSE(e.contains("lra_average"));
  const json& s4d = s["open"][2];
  EXPECT_EQ(s4d["plugin"], "s4d");
  EXPECT_TRUE(s4d["tasks"]["mqar"]["state_bytes"].is_null());
  EXPECT_EQ(s4d["tasks"]["mqar"]["state_note"], "not measured: <b>no decode_step</b>");
  EXPECT_EQ(s["open_baselines"][0]["baseline"], true);
  EXPECT_TRUE(s["open_baselines"][0]["rank"].is_null());
  EXPECT_EQ(j["suites"][1]["suite"], "mad");
  EXPECT_EQ(j["suites"][1]["open"].size(), 0u);
}

// A baseline of a suite's task must be a built-in mixer, as LRA's baselines must.
TEST_F(Suites, ASuiteBaselineMustBeABuiltInMixer) {
  BaselineInputs baselines{{write("base/mine", mqar_run("my_mixer", 64, 0.01, 0.9, 0.9))}, {"transformer"}};
  try {
    build_leaderboard({}, {}, lra_official, two_seeds, {}, baselines);
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("'my_mixer' is not a built-in mixer"), std::string::npos) << e.what();
  }
}

// LRA's reference-settings marker says nothing about a task its table has no entry for.
TEST(SuiteEntries, NoLraReferenceMarkerForTasksTheTableDoesNotCover) {
  json r = mqar_run("transformer", 64, 0.01, 0.5, 0.5);
  r["plugin"]["reference_settings"] = {{"entry", nullptr}};
  r["plugin"]["options"] = {{"heads", 2}};
  const auto lra_view = aggregate_scores({in(r, "x")});
  ASSERT_TRUE(lra_view[0].reference) << "as LRA's tables judge it: not the reference settings";
  EXPECT_EQ(lra_view[0].reference->differs.at("mqar"), std::vector<std::string>{kNoReferenceEntry});
  const auto entries = aggregate_suite_entries(find_suite("mqar"), {in(r, "x")});
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_FALSE(entries[0].entry.reference);
  EXPECT_EQ(entries[0].entry.options, json({{"heads", 2}}));
}

// A closed task's score is the protocol's: the mean over every one of its
// official settings (mad-v1's memorization: the baseline and five
// vocabularies); a closed entry that ran some of them gets no task score and a note.
TEST(SuiteEntries, AClosedTaskIsScoredOnlyOverAllItsOfficialSettings) {
  const SuiteDef& mad = find_suite("mad");
  auto closed_run = [](const std::string& setting, double test) {
    json r = mad_run("mad_memorization", setting, 0.0, test, test);
    r["division"] = "closed";
    r["division_reasons"] = json::array();
    return r;
  };
  std::vector<ScoreInput> results = {in(closed_run("baseline", 0.5), "base")};
  auto entries = aggregate_suite_entries(mad, results);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_FALSE(entries[0].tasks.at("mad_memorization").score);
  ASSERT_FALSE(entries[0].entry.notes.empty());
  EXPECT_NE(entries[0].entry.notes.back().find("mad_memorization: 1 of its 6 official settings"), std::string::npos)
      << entries[0].entry.notes.back();
  double sum = 0.5;
  int i = 0;
  for (const char* s : {"vocab_size-512", "vocab_size-1024", "vocab_size-2048", "vocab_size-4096", "vocab_size-8192"}) {
    const double acc = 0.1 * ++i;
    sum += acc;
    results.push_back(in(closed_run(s, acc), s));
  }
  entries = aggregate_suite_entries(mad, results);
  ASSERT_TRUE(entries[0].tasks.at("mad_memorization").score);
  EXPECT_NEAR(*entries[0].tasks.at("mad_memorization").score, sum / 6, 1e-12);
  // The open division shows the mean over what was run, and how many settings that was.
  json open = mad_run("mad_memorization", "baseline", 0.0, 0.5, 0.5);
  entries = aggregate_suite_entries(mad, {in(open, "open")});
  ASSERT_TRUE(entries[0].tasks.at("mad_memorization").score);
  EXPECT_EQ(entries[0].tasks.at("mad_memorization").settings, 1);
}
