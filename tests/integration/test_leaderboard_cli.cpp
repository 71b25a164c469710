// `lrahost leaderboard` end to end: result files from a real tiny run, copied
// and edited (renamed plugins, other tasks and accuracies) and re-sealed so
// that verify accepts them, into index.html / leaderboard.md / leaderboard.json;
// bad inputs write nothing; and the page driven in headless Chromium: the
// table renders, a click on a column header sorts it, a plugin named
// <script>alert(1)</script> is shown as text and never runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "results/result.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kXss = "<script>alert(1)</script>";

// One tiny real run for the whole suite; every other result is an edited copy of it.
class LeaderboardCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    base_dir_ = new TempDir();
    const auto o = lrahost(tiny_run_args(base_dir_->str() + "/data", base_dir_->str() + "/run"));
    ASSERT_EQ(o.code, 0) << o.output;
    base_ = new json(json::parse(read_text(base_dir_->path() / "run" / "result.json")));
  }
  static void TearDownTestSuite() {
    delete base_;
    delete base_dir_;
  }

  // A valid copy of the run as plugin `plugin` on `task` with `accuracy`, written to dir/<name>/result.json.
  fs::path variant(const std::string& name, const std::string& plugin, const std::string& task, double accuracy,
                   int64_t seed = 0) {
    json r = *base_;
    r.erase("digest");
    r["plugin"]["name"] = plugin;
    r["task"]["name"] = task;
    r["metrics"]["test_accuracy"] = accuracy;
    r["seed"] = seed;
    return lra::host::write_result(dir_.path() / "results" / name, lra::host::seal(r));
  }

  // The scene the page tests use: entries with and without averages, a
  // Path-X FAIL, a name with a '|', the XSS name, and one edited (invalid) file.
  void make_results() {
    for (const char* t : {"listops", "text", "retrieval", "image", "pathfinder"}) {
      variant(std::string("alpha-") + t, "alpha", t, t == std::string("listops") ? 0.6 : 0.7);
      variant(std::string("xss-") + t, kXss, t, t == std::string("listops") ? 0.3 : 0.65);
    }
    variant("alpha-pathx", "alpha", "pathx", 0.5);  // no better than chance: FAIL
    variant("beta", "beta|pipe", "listops", 0.9);
    variant("gamma", "gamma", "text", 0.8);          // no ListOps score: sorts last
    fs::create_directories(dir_.path() / "results" / "real");
    fs::copy_file(base_dir_->path() / "run" / "result.json", dir_.path() / "results" / "real" / "result.json");
    json edited = *base_;  // changed after the run, digest kept: invalid
    edited["metrics"]["test_accuracy"] = 0.99;
    write_text(dir_.path() / "results" / "edited" / "result.json", edited.dump(2));
  }

  fs::path results() const { return dir_.path() / "results"; }
  fs::path site() const { return dir_.path() / "site"; }

  static TempDir* base_dir_;
  static json* base_;
  TempDir dir_;
};

TempDir* LeaderboardCli::base_dir_ = nullptr;
json* LeaderboardCli::base_ = nullptr;

// A bench.json as lrahost bench writes it, for two plugins at one length.
std::string bench_json(const std::string& a, const std::string& b) {
  auto point = [](const std::string& plugin, double steps, int64_t bytes) {
    return json{{"plugin", plugin}, {"length", 1024}, {"batch", 32}, {"device", "cpu (2 threads)"},
                {"dtype", "float32"}, {"status", "ok"}, {"steps_per_s", steps}, {"repetition_steps_per_s", {steps}},
                {"tokens_per_s", steps * 32 * 1024}, {"peak_memory_bytes", bytes},
                {"peak_memory_kind", "process peak RSS"}, {"params", 1000}, {"flops_per_step", nullptr},
                {"mfu", nullptr}};
  };
  return json{{"schema", "lrahost.bench/v1"}, {"results", {point(a, 4, 2000000000), point(b, 9, 500000000)}}}.dump(2);
}

TEST_F(LeaderboardCli, WritesThePageMarkdownAndJson) {
  make_results();
  write_text(dir_.path() / "bench.json", bench_json("alpha", kXss));
  const auto o = lrahost("leaderboard " + results().string() + " --out " + site().string() + " --title 'Test board' --bench " +
                         (dir_.path() / "bench.json").string());
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("1 invalid result"), std::string::npos) << o.output;

  const json j = json::parse(read_text(site() / "leaderboard.json"));
  EXPECT_EQ(j["schema"], "lrahost.leaderboard/v1");
  EXPECT_EQ(j["title"], "Test board");
  EXPECT_TRUE(j["closed"].empty());  // smoke runs are open
  ASSERT_EQ(j["open"].size(), 5u);   // alpha, the XSS name, beta, gamma, the real run
  EXPECT_EQ(j["open"][0]["plugin"], "alpha");  // best LRA average first
  EXPECT_EQ(j["open"][0]["rank"], 1);
  EXPECT_NEAR(j["open"][0]["lra_average"].get<double>(), 0.68, 1e-12);
  EXPECT_EQ(j["open"][0]["tasks"]["pathx"]["fail"], true);
  EXPECT_EQ(j["open"][1]["plugin"], kXss);
  EXPECT_NEAR(j["open"][1]["lra_average"].get<double>(), 0.58, 1e-12);
  ASSERT_EQ(j["invalid"].size(), 1u);
  EXPECT_NE(j["invalid"][0]["source"].get<std::string>().find("edited"), std::string::npos);
  EXPECT_NE(j["invalid"][0]["reasons"].dump().find("edited after the run"), std::string::npos);
  EXPECT_NEAR(j["bench"]["chart_accuracy_percent"]["alpha"].get<double>(), 68.0, 1e-9);

  const std::string md = read_text(site() / "leaderboard.md");
  EXPECT_NE(md.find("| 1 | alpha 1.0.0"), std::string::npos) << md;
  EXPECT_NE(md.find("beta\\|pipe"), std::string::npos) << md;
  EXPECT_NE(md.find("| FAIL |"), std::string::npos) << md;
  EXPECT_EQ(md.find("<script>"), std::string::npos) << md;

  const std::string html = read_text(site() / "index.html");
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(html.find(kXss), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("class=\"bubble\""), std::string::npos);
}

TEST_F(LeaderboardCli, BadInputsWriteNothing) {
  make_results();
  write_text(results() / "garbage" / "result.json", "{ this is not JSON");
  auto o = lrahost("leaderboard " + results().string() + " --out " + site().string());
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("garbage"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(site()));
  fs::remove_all(results() / "garbage");

  o = lrahost("leaderboard " + (dir_.path() / "nowhere").string() + " --out " + site().string());
  EXPECT_EQ(o.code, 2) << o.output;
  write_text(dir_.path() / "bench.json", R"({"schema": "lrahost.bench/v1", "results": [{"plugin": "x"}]})");
  o = lrahost("leaderboard " + results().string() + " --out " + site().string() + " --bench " + (dir_.path() / "bench.json").string());
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("results[0]"), std::string::npos) << o.output;
  o = lrahost("leaderboard " + results().string());  // no --out
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_FALSE(fs::exists(site()));
}

// --- baselines: the open division's reference rows ------------------------------

// A built-in's result given with --baselines is a shaded, unranked row after
// the open entries in all three files; the entries keep their ranks.
TEST_F(LeaderboardCli, BaselinesAreTheOpenDivisionsReferenceRowsAfterItsEntries) {
  make_results();
  fs::create_directories(dir_.path() / "baselines" / "transformer");
  fs::copy_file(base_dir_->path() / "run" / "result.json", dir_.path() / "baselines" / "transformer" / "result.json");
  const auto o = lrahost("leaderboard " + results().string() + " --out " + site().string() + " --baselines " +
                         (dir_.path() / "baselines").string());
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("5 entries open (and 1 baseline)"), std::string::npos) << o.output;

  const json j = json::parse(read_text(site() / "leaderboard.json"));
  ASSERT_EQ(j["open"].size(), 5u);
  EXPECT_EQ(j["open"][0]["rank"], 1);
  ASSERT_EQ(j["open_baselines"].size(), 1u);
  EXPECT_EQ(j["open_baselines"][0]["plugin"], "transformer");
  EXPECT_TRUE(j["open_baselines"][0]["rank"].is_null());
  EXPECT_EQ(j["open_baselines"][0]["baseline"], true);
  EXPECT_EQ(j["open_baselines"][0]["division"], "open");

  const std::string html = read_text(site() / "index.html");
  const auto baseline_row = html.find("<tr class=\"baseline\"");
  ASSERT_NE(baseline_row, std::string::npos);
  // After every entry of the open table, before the table ends; one such row, and the legend says what it is.
  EXPECT_GT(baseline_row, html.rfind("<tr class=\"entry\"", html.find("id=\"paper\"")));
  EXPECT_LT(baseline_row, html.find("id=\"paper\""));
  EXPECT_EQ(html.find("<tr class=\"baseline\"", baseline_row + 1), std::string::npos);
  EXPECT_NE(html.find("Rows marked baseline"), std::string::npos);

  const std::string md = read_text(site() / "leaderboard.md");
  const auto md_row = md.find("| baseline | transformer");
  ASSERT_NE(md_row, std::string::npos) << md;
  EXPECT_LT(md_row, md.find("| — | majority class")) << md;
  EXPECT_GT(md_row, md.find("| 1 | alpha")) << md;
}

// A baseline that cannot be trusted stops the command (exit 2 or 5) and nothing is written.
TEST_F(LeaderboardCli, BaselinesThatAreNotTheHostsOwnVerifiedResultsAreRefused) {
  make_results();
  const fs::path bad = dir_.path() / "bad";
  auto refused = [&](const fs::path& baseline, int code, const std::string& says) {
    const auto o = lrahost("leaderboard " + (results() / "alpha-text").string() + " --out " + site().string() +
                           " --baselines " + baseline.string());
    EXPECT_EQ(o.code, code) << o.output;
    EXPECT_NE(o.output.find(says), std::string::npos) << o.output;
    EXPECT_NE(o.output.find(baseline.string()), std::string::npos) << "names the file: " << o.output;
    EXPECT_FALSE(fs::exists(site())) << o.output;
  };
  // Edited after the run: does not verify.
  refused(results() / "edited" / "result.json", 5, "does not verify");
  // A valid result of a plugin that is not one of the host's mixers.
  refused(results() / "beta" / "result.json", 2, "not a built-in mixer of lrahost");
  // The same file as a result and as a baseline (here through a symlinked folder).
  fs::create_directories(bad);
  fs::create_directory_symlink(results() / "alpha-text", bad / "link");
  refused(bad / "link" / "result.json", 2, "both as a result and as a baseline");
  // A folder without results.
  fs::create_directories(bad / "empty");
  refused(bad / "empty", 2, "no result.json found");
}

// docs/measured/cpu/baselines/: the smoke runs of every built-in mixer this
// host has (each a real lrahost run on the development machine) verify with
// this build and make the open division's baseline rows.
TEST(LeaderboardBaselines, TheCommittedBaselinesCoverEveryBuiltInAndVerify) {
  const fs::path root = fs::path(LRA_SOURCE_DIR) / "docs" / "measured" / "cpu" / "baselines";
  // The host's own mixers: what `lrahost plugins` lists, less the Python loader.
  const auto listing = lrahost("plugins");
  ASSERT_EQ(listing.code, 0) << listing.output;
  std::set<std::string> builtins;
  std::istringstream lines(listing.output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string kind, name;
    if (words >> kind >> name && kind == "mixer" && name != "python") builtins.insert(name);
  }
  ASSERT_GE(builtins.size(), 13u) << listing.output;
  // One folder per task measured (listops at least); each holds every built-in.
  std::vector<std::string> tasks;
  for (const auto& t : fs::directory_iterator(root))
    if (t.is_directory()) tasks.push_back(t.path().filename().string());
  ASSERT_NE(std::find(tasks.begin(), tasks.end(), "listops"), tasks.end());
  for (const auto& task : tasks) {
    std::set<std::string> measured;
    for (const auto& d : fs::directory_iterator(root / task)) {
      if (!fs::exists(d.path() / "result.json")) continue;
      measured.insert(d.path().filename().string());
      const auto v = lrahost("verify " + (d.path() / "result.json").string());
      EXPECT_EQ(v.code, 0) << d.path() << ": " << v.output;
      const json r = json::parse(read_text(d.path() / "result.json"));
      EXPECT_EQ(r["plugin"]["name"], d.path().filename().string());
      EXPECT_EQ(r["task"]["preset"], "smoke");
      EXPECT_EQ(r["task"]["name"], task);
    }
    EXPECT_EQ(measured, builtins) << task;
  }
  // With a result of another plugin beside them: every built-in is a baseline row.
  TempDir dir;
  const auto o = lrahost("leaderboard " + std::string(LRA_SOURCE_DIR) +
                         "/docs/measured/cpu/smoke-listops-retention.result.json --out " + (dir.path() / "site").string() +
                         " --baselines " + root.string());
  ASSERT_EQ(o.code, 0) << o.output;
  const json j = json::parse(read_text(dir.path() / "site" / "leaderboard.json"));
  std::set<std::string> rows;
  for (const auto& b : j["open_baselines"]) rows.insert(b["plugin"].get<std::string>());
  EXPECT_EQ(rows, builtins);
  // And the same file as a result and a baseline is refused.
  const auto twice = lrahost("leaderboard " + (root / "listops" / "transformer" / "result.json").string() + " --out " +
                             (dir.path() / "again").string() + " --baselines " + root.string());
  EXPECT_EQ(twice.code, 2) << twice.output;
}

// --- the page in a real browser -------------------------------------------------

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "the page lacks " << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

std::string unescape_html_text(std::string s) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{"&lt;", "<"}, {"&gt;", ">"}, {"&nbsp;", " "}, {"&amp;", "&"}})
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// Runs in the page after its own script: clicks headers of the open table,
// records what the rows look like, and leaves it all as JSON in <pre id="lrahost-test">.
constexpr const char* kDriver = R"JS(
<script>
(function () {
  var out = {};
  var table = document.getElementById('open-table');
  var heads = table.tHead.rows[0].cells;
  function header(label) {
    return Array.prototype.filter.call(heads, function (th) { return th.textContent === label; })[0];
  }
  function column(label) { return Array.prototype.indexOf.call(heads, header(label)); }
  function snapshot(label) {
    var col = column(label);
    return Array.prototype.map.call(table.tBodies[0].rows, function (row) {
      return { name: row.cells[1].querySelector('.name').textContent, key: row.cells[col].getAttribute('data-sort'),
               ref: row.className === 'ref' };
    });
  }
  out.rows = table.tBodies[0].rows.length;
  out.paper_rows = document.getElementById('paper-table').tBodies[0].rows.length;
  out.refs_in_open = table.querySelectorAll('tr.ref').length;
  out.headers = Array.prototype.map.call(heads, function (th) { return th.textContent; });
  out.initial = snapshot('Avg');
  header('ListOps').click();
  out.first = snapshot('ListOps');
  out.first_sort = header('ListOps').getAttribute('aria-sort');
  header('ListOps').click();
  out.second = snapshot('ListOps');
  out.second_sort = header('ListOps').getAttribute('aria-sort');
  out.avg_sort_after = header('Avg').getAttribute('aria-sort');
  out.xss_cells = Array.prototype.filter.call(document.querySelectorAll('.name'), function (e) {
    return e.textContent.indexOf('alert') >= 0;
  }).map(function (e) { return e.textContent; });
  out.scripts = document.scripts.length;
  out.alerts = window.__lrahostAlerts;
  out.bubbles = document.querySelectorAll('#chart circle.bubble').length;
  var pre = document.createElement('pre');
  pre.id = 'lrahost-test';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
)JS";

TEST_F(LeaderboardCli, PageSortsAndShowsNamesAsTextInChromium) {
  const std::string chromium = chromium_path();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not on PATH; install it (scripts/bootstrap does: apt-get install chromium) to test the page in a browser";
  make_results();
  write_text(dir_.path() / "bench.json", bench_json("alpha", kXss));
  const auto o = lrahost("leaderboard " + results().string() + " --out " + site().string() + " --bench " + (dir_.path() / "bench.json").string());
  ASSERT_EQ(o.code, 0) << o.output;

  // A copy of the page: alert() counted from the first moment (before any of the page's markup), then the driver.
  std::string page = read_text(site() / "index.html");
  page = replace_once(page, "<head>", "<head>\n<script>window.__lrahostAlerts = 0; window.alert = function () { window.__lrahostAlerts++; };</script>");
  page = replace_once(page, "</body>", std::string(kDriver) + "</body>");
  const fs::path driven = dir_.path() / "driven.html";
  write_text(driven, page);

  // Headless, as root in CI (hence --no-sandbox), no display; its own profile so that runs never share one.
  const auto start = std::chrono::steady_clock::now();
  const std::string dom = run_capture("HOME=" + dir_.str() + " timeout 120 " + chromium +
                                      " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run"
                                      " --user-data-dir=" + (dir_.path() / "profile").string() +
                                      " --dump-dom file://" + driven.string() + " 2>/dev/null");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "chromium: " << seconds << " s\n";
  RecordProperty("chromium_seconds", std::to_string(seconds));

  const std::string open_tag = "<pre id=\"lrahost-test\">";
  const auto at = dom.find(open_tag);
  ASSERT_NE(at, std::string::npos) << "the driver left no result; the DOM:\n" << dom.substr(0, 4000);
  const auto end = dom.find("</pre>", at);
  const json r = json::parse(unescape_html_text(dom.substr(at + open_tag.size(), end - at - open_tag.size())));

  // The open table renders its five entries; the paper's eleven rows have their own table, none among the entries.
  EXPECT_EQ(r["rows"], 5);
  EXPECT_EQ(r["paper_rows"], 11);
  EXPECT_EQ(r["refs_in_open"], 0);
  EXPECT_EQ(r["headers"], json({"#", "Model", "Seeds", "ListOps", "Text", "Retrieval", "Image", "Pathfinder", "Path-X", "Avg"}));
  EXPECT_EQ(r["initial"][0]["name"], "alpha");  // 68.00 on average, the best entry

  // One click: ListOps descending, rows without a ListOps score last; a second click: ascending, still last.
  auto check_order = [](const json& rows, bool descending) {
    double previous = descending ? 1e9 : -1e9;
    bool missing_seen = false, sorted = true;
    std::vector<std::string> entries;
    for (const auto& row : rows) {
      if (!row["ref"].get<bool>()) entries.push_back(row["name"]);
      if (row["key"].is_null()) {
        missing_seen = true;
        continue;
      }
      const double v = std::stod(row["key"].get<std::string>());
      sorted = sorted && !missing_seen && (descending ? v <= previous : v >= previous);
      previous = v;
    }
    EXPECT_TRUE(sorted && missing_seen) << (descending ? "descending" : "ascending")
                                        << ", unscored rows last, expected: " << rows.dump();
    return entries;
  };
  EXPECT_EQ(r["first_sort"], "descending");
  const auto down = check_order(r["first"], true);
  EXPECT_EQ(down.front(), "beta|pipe");  // 90.00
  EXPECT_EQ(down.back(), "gamma");       // no ListOps
  EXPECT_EQ(r["first"][0]["name"], "beta|pipe");
  EXPECT_EQ(r["second_sort"], "ascending");
  const auto up = check_order(r["second"], false);
  EXPECT_EQ(up.back(), "gamma");
  EXPECT_TRUE(r["avg_sort_after"].is_null());  // the sort mark moved to the clicked column

  // The XSS name is text in the page, and nothing ran it.
  EXPECT_EQ(r["xss_cells"], json({kXss}));
  EXPECT_EQ(r["alerts"], 0);
  EXPECT_EQ(r["scripts"], 3);  // the alert counter, the page's own, the driver
  EXPECT_EQ(r["bubbles"], 2);  // the chart: alpha and the XSS name, both measured and averaged
  EXPECT_LT(seconds, 60);
}

}  // namespace
}  // namespace lra::test
