// Issue 16, the leaderboard side: spoofed names are shown escaped, open
// entries say how they were made, closed entries average only official seeds,
// Path-X counts are checked against the result's own data, and closed results
// trained on other data than the rest are flagged. Results come from one real
// smoke run, edited and re-sealed (closed ones copy the official manifest's
// configuration, budget, split sizes and data fingerprint: what verify cannot
// tell from an official run by content alone).
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "manifest/manifest.h"
#include "manifest/official_data.h"
#include "manifest/releases.h"
#include "official_rules.h"
#include "results/result.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class LeaderboardTrust : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    auto o = lrahost("run --plugin transformer --task listops --preset smoke --set train.steps=20 --set "
                     "train.eval_every=20 --threads 2 --out " + (dir_->path() / "base").string());
    ASSERT_EQ(o.code, 0) << o.output;
    base_ = new json(json::parse(read_text(dir_->path() / "base" / "result.json")));
  }
  static void TearDownTestSuite() {
    delete base_;
    delete dir_;
  }
  void SetUp() override { fs::remove_all(results()); }
  static fs::path results() { return dir_->path() / "results"; }
  static fs::path site() { return dir_->path() / "site"; }

  static void write(const std::string& name, json r) {
    r.erase("digest");
    lra::host::write_result(results() / name, lra::host::seal(r));
  }
  // A closed claim under the current official manifest of `task`, consistent in every checkable field.
  static json closed(const std::string& task, int64_t seed) {
    json r = *base_;
    const auto rel = lra::host::current_release(task);
    const auto row = lra::host::find_official_data(rel->version, task);
    r["division"] = "closed";
    r["division_reasons"] = json::array();
    r["overrides"] = json::array();
    r["task"]["name"] = task;
    r["task"]["preset"] = "official";
    r["task"]["manifest_sha256"] = rel->sha256;
    r["task"]["manifest_release"] = rel->version;
    r["task"]["examples"] = {{"train", row->train}, {"val", row->val}, {"test", row->test}};
    if (!row->fingerprint.empty()) r["task"]["data_fingerprint"] = row->fingerprint;
    r["config"] = lra::host::to_json(lra::host::parse_manifest(
        read_text(fs::path(LRA_SOURCE_DIR) / "manifests" / rel->file), "official"));
    r["config"]["train"]["seed"] = seed;
    r["rules"] = official_rules(task);
    r["seed"] = seed;
    r["plugin"]["reference_settings"] = nullptr;
    return r;
  }
  static std::string board(const std::string& file = "index.html") {
    fs::remove_all(site());
    auto o = lrahost("leaderboard " + results().string() + " --out " + site().string());
    EXPECT_EQ(o.code, 0) << o.output;
    return read_text(site() / file);
  }
  static TempDir* dir_;
  static json* base_;
};
TempDir* LeaderboardTrust::dir_ = nullptr;
json* LeaderboardTrust::base_ = nullptr;

TEST_F(LeaderboardTrust, BidiAndInvisibleCharactersInNamesAreShownEscaped) {
  json r = *base_;
  r["plugin"]["name"] = "evil\u202Eremrofsnart";
  r["plugin"]["version"] = "1\u200B.0";
  write("spoof", r);
  for (const char* file : {"index.html", "leaderboard.md"}) {
    const std::string page = board(file);
    EXPECT_EQ(page.find("\u202E"), std::string::npos) << file;
    EXPECT_EQ(page.find("\u200B"), std::string::npos) << file;
    EXPECT_NE(page.find("evil&lt;U+202E&gt;remrofsnart"), std::string::npos) << file;
    EXPECT_NE(page.find("1&lt;U+200B&gt;.0"), std::string::npos) << file;
  }
  // verify names it too, on the terminal.
  json bad = r;
  bad["valid"] = false;
  bad["invalid_reasons"] = {"plugin \u202Eoops"};
  write("spoof-invalid", bad);
  auto v = lrahost("verify " + (results() / "spoof-invalid").string());
  EXPECT_EQ(v.output.find("\u202E"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("<U+202E>oops"), std::string::npos) << v.output;
}

TEST_F(LeaderboardTrust, OpenEntriesSayWhichPresetAndOverridesMadeThem) {
  write("full", *base_);
  json shorter = *base_;
  shorter["overrides"] = {"train.steps=5"};
  shorter["config"]["train"]["steps"] = 5;
  write("short", shorter);
  const std::string md = board("leaderboard.md");
  EXPECT_NE(md.find("preset smoke; overrides train.steps=20, train.eval_every=20"), std::string::npos) << md;
  EXPECT_NE(md.find("preset smoke; overrides train.steps=5"), std::string::npos) << md;
  const json j = json::parse(read_text(site() / "leaderboard.json"));
  EXPECT_EQ(j["open"].size(), 2u) << "runs made differently must not merge into one entry";
}

TEST_F(LeaderboardTrust, AClosedEntryAveragesOnlyTheOfficialSeedsAndNamesTheExtraOne) {
  for (int seed : {0, 1, 2, 3}) {
    json r = closed("listops", seed);
    r["metrics"]["test_accuracy"] = seed == 3 ? 0.99 : 0.30;
    write("s" + std::to_string(seed), r);
  }
  board();
  const json j = json::parse(read_text(site() / "leaderboard.json"));
  ASSERT_EQ(j["closed"].size(), 1u) << j.dump(2);
  const json& e = j["closed"][0];
  EXPECT_EQ(e["tasks"]["listops"]["seeds"], json::array({0, 1, 2}));
  EXPECT_NEAR(e["tasks"]["listops"]["mean"].get<double>(), 0.30, 1e-12);
  EXPECT_NE(read_text(site() / "leaderboard.md").find("listops: seed 3 not averaged (not an official trial seed of "
                                                      "release lra-v1.3: 0, 1, 2)"),
            std::string::npos);
}

TEST_F(LeaderboardTrust, APathXCountItsOwnDataCannotHoldIsRejectedWithTheReason) {
  json r = *base_;
  r["task"]["name"] = "pathx";
  r["config"]["data"] = {{"images", 100}, {"contour_length", 14}, {"seed", 0}, {"distractors", "from_contour"}};
  r["task"]["examples"] = {{"train", 80}, {"val", 10}, {"test", 1000000000}};
  r["metrics"]["test_accuracy"] = 0.5002;
  write("inflated", r);
  json honest = r;
  honest["task"]["examples"]["test"] = 10;
  honest["plugin"]["name"] = "honest";
  write("honest", honest);
  const std::string md = board("leaderboard.md");
  EXPECT_NE(md.find("Path-X count rejected: task.examples.test is 1000000000, but the result's own data "
                    "(config.data.images 100) hold 10 test images"),
            std::string::npos)
      << md;
  const json j = json::parse(read_text(site() / "leaderboard.json"));
  ASSERT_EQ(j["open"].size(), 1u);
  EXPECT_EQ(j["open"][0]["plugin"], "honest");
  EXPECT_TRUE(j["open"][0]["tasks"]["pathx"]["fail"].get<bool>());  // 50% of 10 images: chance
}

TEST_F(LeaderboardTrust, ClosedResultsOnOtherDownloadedDataAreFlagged) {
  for (int seed : {0, 1, 2}) {
    json a = closed("text", seed);
    a["task"]["data_fingerprint"] = "sha256:" + std::string(64, 'a');
    write("a" + std::to_string(seed), a);
  }
  json b = closed("text", 0);
  b["plugin"]["name"] = "other";
  b["task"]["data_fingerprint"] = "sha256:" + std::string(64, 'b');
  write("b0", b);
  const std::string md = board("leaderboard.md");
  EXPECT_NE(md.find("text: trained on other data than the other closed text results (task.data_fingerprint "
                    "sha256:bbbbbbbbbbbb…, most have sha256:aaaaaaaaaaaa…)"),
            std::string::npos)
      << md;
  // Only the odd one is flagged.
  EXPECT_EQ(md.find("most have sha256:bbbb"), std::string::npos) << md;
}

}  // namespace
}  // namespace lra::test
