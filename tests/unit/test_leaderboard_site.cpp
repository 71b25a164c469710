// The leaderboard site: reading and verifying result files into a board,
// and index.html / leaderboard.md / leaderboard.json rendered from it —
// divisions, the paper's rows, invalid results, the chart, and escaping.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "bench/bench_report.h"
#include "common/sha256.h"
#include "leaderboard/board.h"
#include "leaderboard/paper_reference.h"
#include "leaderboard/site.h"
#include "leaderboard/site_text.h"
#include "lra/status.h"
#include "results/result.h"
#include "leaderboard_result.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace lra::host;

namespace {

const std::string kXss = "<script>alert(1)</script>";

// The official manifests of the six LRA tasks, as a host embeds them.
std::vector<OfficialManifest> fake_official(const std::string& task) {
  const auto& tasks = lra_task_order();
  if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) return {};
  return {{"lra-v1.1", sha256_hex("official " + task), "", ""}};
}

// The official trial seeds: 0 and 1, the seeds closed_suite() writes.
std::optional<std::vector<int64_t>> two_seeds(const std::string&, const std::string&) {
  return std::vector<int64_t>{0, 1};
}

// A complete, valid result as lrahost run writes it (unsealed), its validation accuracy its test accuracy.
json run_result(const std::string& plugin, const std::string& task, int64_t seed, double accuracy, bool closed) {
  return lra::test::leaderboard_result(plugin, task, seed, accuracy, accuracy, closed);
}

class Site : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lra-test-leaderboard-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const json& sealed) { return write_result(dir_ / name, sealed); }
  fs::path write_text(const std::string& name, const std::string& text) {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  // Five closed tasks of `plugin` at `acc`, seeds 0 and 1 (acc and acc + 0.02).
  std::vector<fs::path> closed_suite(const std::string& plugin, double acc) {
    std::vector<fs::path> files;
    for (const auto& t : lra_average_tasks())
      for (int seed : {0, 1})
        files.push_back(write(plugin + "/" + t + "/" + std::to_string(seed), seal(run_result(plugin, t, seed, acc + 0.02 * seed, true))));
    return files;
  }

  fs::path dir_;
};

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

bench::BenchPoint point(const std::string& plugin, double steps, int64_t bytes) {
  bench::BenchPoint p;
  p.plugin = plugin;
  p.length = 1024;
  p.batch = 32;
  p.device = "cpu (2 threads)";
  p.dtype = "float32";
  p.steps_per_s = steps;
  p.repetition_steps_per_s = {steps};
  p.tokens_per_s = steps * 32 * 1024;
  p.peak_memory_bytes = bytes;
  p.peak_memory_kind = "process peak RSS";
  p.params = 1000;
  return p;
}

}  // namespace

TEST_F(Site, VerifiesEveryFileAndSeparatesDivisions) {
  auto files = closed_suite("performer", 0.6);
  const auto better = closed_suite("transformer", 0.7);
  files.insert(files.end(), better.begin(), better.end());
  files.push_back(write("open/listops", seal(run_result("local", "listops", 0, 0.3, false))));
  // Claims closed with a manifest that is not the official one: verify says invalid.
  json fake = run_result("cheater", "listops", 0, 0.99, true);
  fake["task"]["manifest_sha256"] = sha256_hex("my own manifest");
  files.push_back(write("fake/listops", seal(fake)));
  // Edited after the run: the digest no longer matches.
  json edited = seal(run_result("editor", "text", 0, 0.5, false));
  edited["metrics"]["test_accuracy"] = 0.95;
  files.push_back(write_text("edited/result.json", edited.dump()));

  const Leaderboard board = build_leaderboard(files, {}, fake_official, two_seeds);
  EXPECT_EQ(board.result_files, files.size());
  ASSERT_EQ(board.closed.size(), 2u);
  EXPECT_EQ(board.closed[0].plugin, "transformer");
  EXPECT_NEAR(*board.closed[0].lra_average, 0.71, 1e-12);
  EXPECT_EQ(board.closed[1].plugin, "performer");
  ASSERT_EQ(board.open.size(), 1u);
  EXPECT_EQ(board.open[0].plugin, "local");
  ASSERT_EQ(board.invalid.size(), 2u);
  EXPECT_EQ(board.invalid[0].plugin, "cheater");
  EXPECT_EQ(board.invalid[0].claimed_division, "closed");
  const auto has = [](const InvalidResult& r, const std::string& needle) {
    return std::any_of(r.reasons.begin(), r.reasons.end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; });
  };
  EXPECT_TRUE(has(board.invalid[0], "is not a released official manifest"));
  EXPECT_TRUE(has(board.invalid[1], "edited after the run"));

  const json j = leaderboard_json(board);
  EXPECT_EQ(j["schema"], "lrahost.leaderboard/v1");
  EXPECT_EQ(j["closed"][0]["rank"], 1);
  EXPECT_EQ(j["closed"][1]["rank"], 2);
  EXPECT_TRUE(j["open"][0]["rank"].is_null());  // no average: not ranked
  EXPECT_EQ(j["invalid"].size(), 2u);
  EXPECT_EQ(j["reference"]["rows"].size(), 11u);
  EXPECT_EQ(j["reference"]["rows"][0]["average_percent"], 54.39);
  EXPECT_EQ(j["reference"]["rows"][0]["tasks_percent"]["listops"], 36.37);
  EXPECT_TRUE(j["bench"].is_null());
  // The invalid results are not scored anywhere.
  EXPECT_EQ(j.dump().find("\"plugin\":\"cheater\",\"plugin_sha256\""), std::string::npos);
}

TEST_F(Site, ClosedClaimWithASmokePresetIsShownOpenNotClosed) {
  // verify establishes the division: a valid file that claims open stays open even with the official manifest.
  json r = run_result("transformer", "listops", 0, 0.4, true);
  r["division"] = "open";
  const Leaderboard board = build_leaderboard({write("a", seal(r))}, {}, fake_official, two_seeds);
  EXPECT_TRUE(board.closed.empty());
  EXPECT_EQ(board.open.size(), 1u);
}

TEST_F(Site, UnreadableResultsAndBadBenchFilesAreErrors) {
  const auto good = write("good", seal(run_result("local", "listops", 0, 0.3, false)));
  const auto garbage = write_text("bad/result.json", "{ not json");
  try {
    build_leaderboard({good, garbage}, {}, fake_official, two_seeds);
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find(garbage.string()), std::string::npos) << e.what();
  }
  const auto bench = write_text("bench.json", R"({"schema": "lrahost.bench/v1", "results": [{"plugin": "x"}]})");
  try {
    build_leaderboard({good}, {bench}, fake_official, two_seeds);
    FAIL() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("results[0]"), std::string::npos) << e.what();
  }
}

// A closed self-pretrained result (a pretraining record beside its
// configuration's [pretrain]) is ranked in its own table, never with the same
// plugin's from-scratch results, which keep their closed entry.
TEST_F(Site, SelfPretrainedResultsAreRankedApart) {
  auto scratch = closed_suite("transformer", 0.6);
  std::vector<fs::path> files = scratch;
  for (const auto& t : {"listops", "text", "retrieval", "image", "pathfinder"})
    for (int64_t seed : {0, 1}) {
      json r = run_result("transformer", t, seed, 0.8, true);
      r["config"]["pretrain"] = {{"steps", 10}, {"mask_ratio", 0.1}};
      r["model"] = {{"summary", "first"}};
      r["pretraining"] = {{"objective", "masked_tokens"},
                          {"steps", 10},
                          {"mask_ratio", 0.1},
                          {"data",
                           {{"split", "train"},
                            {"examples", 100},
                            {"inputs_fingerprint", sha256_hex("train inputs")},
                            {"held_out_inputs", {{"val", sha256_hex("val")}, {"test", sha256_hex("test")}}}}},
                          {"weights_sha256", sha256_hex("weights")},
                          {"weights_file", "pretraining/encoder.pt"},
                          {"history", json::array()}};
      files.push_back(write(std::string("spt/") + t + "-" + std::to_string(seed), seal(r)));
    }
  const Leaderboard board = build_leaderboard(files, {}, fake_official, two_seeds);
  EXPECT_TRUE(board.invalid.empty()) << board.invalid[0].reasons[0];
  ASSERT_EQ(board.closed.size(), 1u);
  ASSERT_EQ(board.self_pretrained.size(), 1u);
  EXPECT_EQ(board.closed[0].protocol, "from scratch");
  EXPECT_EQ(board.self_pretrained[0].protocol, "self-pretrained");
  ASSERT_TRUE(board.self_pretrained[0].lra_average.has_value());
  EXPECT_NEAR(*board.self_pretrained[0].lra_average, 0.80, 1e-9);
  EXPECT_NEAR(*board.closed[0].lra_average, 0.61, 1e-9);  // seeds at 0.60 and 0.62
  const json j = leaderboard_json(board);
  EXPECT_EQ(j["self_pretrained"].size(), 1u);
  EXPECT_EQ(j["closed"].size(), 1u);
  EXPECT_NE(leaderboard_markdown(board).find("## Self-pretrained division"), std::string::npos);
}

TEST_F(Site, HtmlIsOneSelfContainedSortablePage) {
  auto files = closed_suite("transformer", 0.7);
  files.push_back(write("open/listops", seal(run_result("local", "listops", 0, 0.3, false))));
  Leaderboard board = build_leaderboard(files, {}, fake_official, two_seeds);
  board.title = "My board";
  board.generator = "lrahost test";
  const std::string html = leaderboard_html(board);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>My board</title>"), std::string::npos);
  // Nothing fetched: no links, sources, imports or remote URLs (the SVG namespace is not fetched).
  for (const char* external : {"<link", " src=", "@import", "url(", "https://"}) EXPECT_EQ(html.find(external), std::string::npos) << external;
  EXPECT_EQ(count(html, "<script"), 1u);
  // closed, open, the LRA paper's, the self-pretraining paper's (the self-pretrained division has no results: no table)
  EXPECT_EQ(count(html, "<table class=\"board\""), 4u);
  EXPECT_EQ(count(html, "<tr class=\"ref\""), 11u + spt_paper_rows().size());  // each reference row once
  EXPECT_LT(html.find("id=\"open-table\""), html.find("id=\"paper-table\"")) << "each division's entries first";
  EXPECT_LT(html.find("id=\"self-pretrained\""), html.find("id=\"spt-paper-table\""));
  EXPECT_EQ(html.find("<tr class=\"ref\""), html.find("<tr class=", html.find("id=\"spt-paper-table\"")));
  EXPECT_EQ(html.find("<tr class=\"ref\"", html.find("id=\"paper-table\"")),
            html.find("<tr class=", html.find("id=\"paper-table\"")));
  EXPECT_NE(html.find("<span class=\"badge\">SPT paper</span>"), std::string::npos);
  EXPECT_EQ(count(html, "<tr class=\"entry\""), 2u);
  // Closed: transformer's row is the closed table's first.
  const auto closed = html.find("id=\"closed-table\"");
  const auto first_row = html.find("<tr class=", closed);
  EXPECT_EQ(html.find("<tr class=\"entry\"", closed), first_row);
  EXPECT_NE(html.find("data-sort=\"71.000000\">71.00</td>"), std::string::npos);
  EXPECT_NE(html.find(">71.00 ± 1.41</td>"), std::string::npos) << "0.70 and 0.72 over two seeds";
  EXPECT_NE(html.find("<span class=\"badge\">LRA paper</span>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"fail\">FAIL</td>"), std::string::npos);  // the paper's Path-X
  EXPECT_EQ(html.find("id=\"invalid\""), std::string::npos);  // no section without invalid results
  EXPECT_EQ(html.find("id=\"chart\""), std::string::npos);    // nor a chart without bench results
}

// The bar to beat: each table ends with the test sets' majority-class rate
// where the division's entries share it; the options wrap between options.
TEST_F(Site, DivisionsEndWithTheMajorityClassAndOptionsWrap) {
  json a = run_result("local", "listops", 0, 0.3, false), b = run_result("performer", "listops", 0, 0.35, false);
  a["metrics"]["majority_class_rate"] = b["metrics"]["majority_class_rate"] = 0.119;
  b["plugin"]["options"] = {{"kernel", "relu"}, {"nb_features", 0}};
  json t = run_result("local", "text", 0, 0.6, false);
  t["metrics"]["majority_class_rate"] = 0.5;
  json t2 = run_result("performer", "text", 0, 0.6, false);
  t2["metrics"]["majority_class_rate"] = 0.508;  // another test set: no shared rate for Text
  const std::vector<fs::path> files = {write("a/listops", seal(a)), write("b/listops", seal(b)), write("a/text", seal(t)),
                                       write("b/text", seal(t2))};
  const Leaderboard board = build_leaderboard(files, {}, fake_official, two_seeds);
  const std::string md = leaderboard_markdown(board);
  EXPECT_NE(md.find("| — | majority class | | | 11.90 | — |"), std::string::npos) << md;
  EXPECT_NE(md.find("kernel=relu, nb_features=0"), std::string::npos) << md;
  const std::string html = leaderboard_html(board);
  EXPECT_EQ(count(html, "<tfoot><tr class=\"majority\">"), 1u) << "the open table only: closed has no entries";
  EXPECT_EQ(html.find("word-break: break-all"), std::string::npos) << "no breaks inside a word";
  const json j = leaderboard_json(board);
  bool seen = false;
  for (const auto& e : j["open"])
    if (e["tasks"].contains("listops")) {
      EXPECT_EQ(e["tasks"]["listops"]["majority_class"], 0.119);
      seen = true;
    }
  EXPECT_TRUE(seen) << j.dump();
}

// Issue 48: a Python mixer's version is its sources' hash: the page says
// "Python" once and the hash once, not the same hash twice.
TEST_F(Site, APythonMixersHashIsShownOnce) {
  json a = run_result("S4DPort", "listops", 0, 0.3, false);
  const std::string sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  a["plugin"]["sha256"] = sha;
  a["plugin"]["version"] = "py-" + sha.substr(0, 12);
  const Leaderboard board = build_leaderboard({write("p/listops", seal(a))}, {}, fake_official, two_seeds);
  const std::string md = leaderboard_markdown(board);
  EXPECT_NE(md.find("S4DPort Python (0123456789ab)"), std::string::npos) << md;
  EXPECT_EQ(md.find("py-0123456789ab"), std::string::npos) << md;
  const std::string html = leaderboard_html(board);
  EXPECT_NE(html.find(">Python · sha256 0123456789ab"), std::string::npos);
  EXPECT_EQ(html.find("vpy-"), std::string::npos);
  EXPECT_EQ(site::version_label("1.0.0", sha), "1.0.0");
  EXPECT_EQ(site::version_label("py-ffffffffffff", sha), "py-ffffffffffff") << "not this result's hash: as it is";
}

TEST_F(Site, EveryStringFromAResultIsEscaped) {
  // verify now refuses such names and versions in a result (plugin identity
  // rules), so a valid result is scored first and the page is then given the
  // hostile strings: what is tested here is the page's escaping.
  json r = run_result("xss-plugin", "listops", 0, 0.4, false);
  r["plugin"]["options"] = {{"k", "'><img src=x onerror=alert(3)>"}};
  r["plugin"]["sha256"] = sha256_hex("x");
  std::vector<fs::path> files = {write("xss", seal(r))};
  json invalid = run_result("a|b\nc", "<b>task</b>", 0, 0.4, true);  // closed claim, unknown task: invalid
  files.push_back(write("pipe", seal(invalid)));
  Leaderboard board = build_leaderboard(files, {}, fake_official, two_seeds);
  ASSERT_EQ(board.open.size(), 1u);
  board.open[0].plugin = kXss;
  board.open[0].plugin_version = "1\" onmouseover=\"alert(2)";
  board.title = "</title><script>alert(4)</script>";
  board.generator = "<i>gen</i>";
  board.bench = {point(kXss, 5, 1000000), point("transformer", 2, 4000000)};
  board.bench_sources = {"<bench>.json"};
  board.chart_accuracy_percent = {{kXss, 40.0}};
  ASSERT_EQ(board.open.size(), 1u);
  ASSERT_EQ(board.invalid.size(), 1u);

  const std::string html = leaderboard_html(board);
  EXPECT_EQ(count(html, "<script"), 1u) << "only the page's own script";
  for (const char* raw : {"alert(1)</script>", "<img", "\" onmouseover", "<b>task", "<i>gen", "<bench>"})
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(3)&gt;"), std::string::npos);
  EXPECT_NE(html.find("id=\"chart\""), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  // The script itself is constant: no data placed inside it.
  const auto script = html.find("<script>");
  EXPECT_EQ(html.substr(script).find("alert"), std::string::npos);

  const std::string md = leaderboard_markdown(board);
  EXPECT_EQ(md.find("<script"), std::string::npos);
  EXPECT_NE(md.find("a\\|b c"), std::string::npos) << md;  // '|' escaped, the line break gone
  EXPECT_NE(md.find("&lt;b&gt;task&lt;/b&gt;"), std::string::npos) << md;
  // Every table row of the open division has as many cells as its header.
  const auto open = md.find("## Open division");
  const auto header_end = md.find('\n', md.find("| rank", open));
  const std::string row = md.substr(md.find("\n| ", header_end) + 1, md.find('\n', md.find("\n| ", header_end) + 1) - md.find("\n| ", header_end) - 1);
  const std::string head = md.substr(md.find("| rank", open), header_end - md.find("| rank", open));
  auto cells = [](const std::string& line) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < line.size(); ++i) n += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    return n;
  };
  EXPECT_EQ(cells(row), cells(head)) << row;

  const json j = json::parse(leaderboard_json(board).dump());
  EXPECT_EQ(j["open"][0]["plugin"], kXss);  // JSON keeps the text as it is, escaped by JSON's rules
  EXPECT_EQ(j["title"], board.title);
}

TEST_F(Site, ChartPlacesBenchPluginsAtTheirAverage) {
  auto files = closed_suite("transformer", 0.7);
  const auto perf = closed_suite("performer", 0.6);
  files.insert(files.end(), perf.begin(), perf.end());
  const auto bench = write_text("bench.json", json{{"schema", "lrahost.bench/v1"},
                                                   {"results", bench::bench_points_json({point("transformer", 2, 4000000000),
                                                                                         point("performer", 8, 1000000000),
                                                                                         point("linformer", 9, 900000000)})}}
                                                  .dump());
  Leaderboard board = build_leaderboard(files, {bench}, fake_official, two_seeds);
  ASSERT_EQ(board.bench.size(), 3u);
  EXPECT_EQ(board.chart_accuracy_percent.size(), 2u);  // linformer has no result
  EXPECT_NEAR(board.chart_accuracy_percent.at("transformer"), 71.0, 1e-9);
  EXPECT_NEAR(board.chart_accuracy_percent.at("performer"), 61.0, 1e-9);
  const std::string html = leaderboard_html(board);
  EXPECT_EQ(count(html, "class=\"bubble\""), 2u);
  EXPECT_NE(html.find("linformer"), std::string::npos);  // named in the chart's note
  const json j = leaderboard_json(board);
  EXPECT_EQ(j["bench"]["points"].size(), 3u);
  EXPECT_EQ(j["bench"]["sources"][0], bench.string());
}

TEST_F(Site, ClosedEntryWithMissingOfficialSeedsIsMarked) {
  const auto three_for_listops = [](const std::string& task, const std::string&) -> std::optional<std::vector<int64_t>> {
    if (task == "listops") return std::vector<int64_t>{0, 1, 2};
    return std::vector<int64_t>{0, 1};
  };
  const Leaderboard board = build_leaderboard(closed_suite("performer", 0.6), {}, fake_official, three_for_listops);
  ASSERT_EQ(board.closed.size(), 1u);
  ASSERT_EQ(board.closed[0].notes.size(), 1u);
  EXPECT_EQ(board.closed[0].notes[0], "listops: seed 2 of 0, 1, 2 missing");
  EXPECT_NE(leaderboard_html(board).find("listops: seed 2 of 0, 1, 2 missing"), std::string::npos);
  EXPECT_NE(leaderboard_markdown(board).find("listops: seed 2 of 0, 1, 2 missing"), std::string::npos);
  EXPECT_EQ(leaderboard_json(board)["closed"][0]["notes"][0], "listops: seed 2 of 0, 1, 2 missing");
  const Leaderboard complete = build_leaderboard(closed_suite("performer", 0.6), {}, fake_official, two_seeds);
  EXPECT_TRUE(complete.closed[0].notes.empty());
}

// A closed result under an older release stays closed and ranked; the entry
// says which release it used and what the registry notes about it.
TEST_F(Site, ClosedEntryUnderAnOlderReleaseSaysSo) {
  const auto older = [](const std::string& task) -> std::vector<OfficialManifest> {
    if (fake_official(task).empty()) return {};
    return {{"lra-v1.0", sha256_hex("official " + task), task == "image" ? "zero pixels are real tokens" : "", "lra-v1.1"},
            {"lra-v1.1", sha256_hex("newer " + task), "", ""}};
  };
  const Leaderboard board = build_leaderboard(closed_suite("performer", 0.6), {}, older, two_seeds);
  ASSERT_EQ(board.closed.size(), 1u);
  const auto& notes = board.closed[0].notes;
  const auto has = [&](const std::string& n) { return std::find(notes.begin(), notes.end(), n) != notes.end(); };
  EXPECT_TRUE(has("listops: release lra-v1.0 (superseded by lra-v1.1)"));
  EXPECT_TRUE(has("image: release lra-v1.0 (superseded by lra-v1.1): zero pixels are real tokens"));
  EXPECT_EQ(notes.size(), lra_average_tasks().size());  // one per task, not one per seed
  EXPECT_NE(leaderboard_markdown(board).find("superseded by lra-v1.1"), std::string::npos);
  // Under the current release nothing is added.
  EXPECT_TRUE(build_leaderboard(closed_suite("linformer", 0.6), {}, fake_official, two_seeds).closed[0].notes.empty());
}

namespace {

// Published strings are cut at a byte bound without splitting a UTF-8 character.
TEST(SiteBounds, BoundedCutsAtACharacterBoundaryAndSaysSo) {
  EXPECT_EQ(site::bounded("transformer", 200), "transformer");
  EXPECT_EQ(site::bounded(std::string(10, 'a'), 10), std::string(10, 'a'));
  EXPECT_EQ(site::bounded(std::string(11, 'a'), 10), std::string(10, 'a') + "…");
  // "é" is two bytes: byte 10 is its second; the cut goes before it.
  EXPECT_EQ(site::bounded(std::string(9, 'a') + "é" + "b", 10), std::string(9, 'a') + "…");
}

}  // namespace
