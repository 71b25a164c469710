// leaderboard/scores.h and the site: built-in mixers are marked by whether
// they ran with the LRA reference settings (manifests/reference-mixers/),
// derived from the recorded options and the table compiled into the host —
// never from the result's own claim.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "leaderboard/scores.h"
#include "leaderboard/site.h"
#include "reference/reference_mixers.h"

using nlohmann::json;
using namespace lra::host;

namespace {

// A result as `lrahost run` records it under the current release: the manifest
// names the reference table (config.rules.reference_settings), the result
// records the task's reference settings of a built-in mixer, plus the
// plugin's compute-only options.
ScoreInput result(const std::string& plugin, const std::string& task, json options, json reference_settings,
                  double accuracy = 0.6, const std::string& division = "closed") {
  json r = {{"division", division},
            {"plugin",
             {{"name", plugin},
              {"version", "1.0.0"},
              {"sha256", "ab" + plugin},
              {"options", options},
              {"reference_settings", reference_settings}}},
            {"task", {{"name", task}, {"preset", division == "closed" ? "official" : "smoke"}, {"examples", {{"test", 1000}}}}},
            {"config", {{"rules", {{"reference_settings", kReferenceTableFile}}}}},
            {"seed", 0},
            {"metrics", {{"test_accuracy", accuracy}}},
            {"digest", "sha256:" + plugin + task + options.dump()}};
  return {plugin + "/" + task + "/result.json", r};
}

json reference_options(const std::string& mixer, const std::string& task) {
  return reference_table().entry(mixer, task, false)->values();
}

// What run records for a built-in: the table named, `used` as claimed.
json claim(bool used) { return {{"table", kReferenceTableFile}, {"used", used}}; }

std::vector<ScoreInput> performer_suite(bool used_claim = true) {
  std::vector<ScoreInput> out;
  for (const auto& t : lra_average_tasks()) {
    json o = reference_options("performer", t);
    o["chunk"] = 64;  // compute-only, any value
    out.push_back(result("performer", t, o, claim(used_claim)));
  }
  return out;
}

Leaderboard board_of(const std::vector<ScoreEntry>& entries) {
  Leaderboard b;
  b.title = "t";
  b.task_columns = lra_task_order();
  for (const auto& e : entries) (e.division == "closed" ? b.closed : b.open).push_back(e);
  return b;
}

}  // namespace

TEST(LeaderboardReference, ReferenceRunsAreOneEntryAcrossTasks) {
  // Performer's reference options differ per task (ListOps: softmax, 2 features):
  // still one entry, with the LRA average, marked as using the reference settings.
  const auto entries = aggregate_scores(performer_suite());
  ASSERT_EQ(entries.size(), 1u);
  const ScoreEntry& e = entries[0];
  ASSERT_TRUE(e.reference);
  EXPECT_TRUE(e.reference->used);
  EXPECT_EQ(e.reference->table, kReferenceTableFile);
  EXPECT_TRUE(e.options.empty()) << "no option differs from the reference";
  EXPECT_TRUE(e.lra_average);
  EXPECT_EQ(e.tasks.size(), 5u);
  const json j = to_json(e);
  EXPECT_EQ(j["reference_settings"]["used"], true);
}

TEST(LeaderboardReference, DerivedFromOptionsNotFromTheClaim) {
  auto in = performer_suite(/*used_claim=*/true);
  // ListOps ran with the plugin's defaults but claims the reference settings.
  in[0].result["plugin"]["options"]["nb_features"] = 256;
  in[0].result["plugin"]["options"]["redraw"] = 0;
  const auto entries = aggregate_scores(in);
  ASSERT_EQ(entries.size(), 2u);
  const ScoreEntry* listops = nullptr;
  const ScoreEntry* rest = nullptr;
  for (const auto& e : entries) (e.tasks.count("listops") ? listops : rest) = &e;
  ASSERT_TRUE(listops && rest);
  ASSERT_TRUE(listops->reference);
  EXPECT_FALSE(listops->reference->used);
  EXPECT_EQ(listops->reference->differs.at("listops"), (std::vector<std::string>{"nb_features", "redraw"}));
  EXPECT_EQ(listops->options, json({{"nb_features", 256}, {"redraw", 0}}));
  EXPECT_TRUE(rest->reference->used);
  EXPECT_EQ(rest->tasks.size(), 4u);

  // A claim of "not used" does not hide a run that did use them.
  auto modest = performer_suite(/*used_claim=*/false);
  EXPECT_TRUE(aggregate_scores(modest)[0].reference->used);
}

TEST(LeaderboardReference, OneSetOnTopOfTheReferenceIsOneEntry) {
  auto in = performer_suite();
  for (auto& r : in) r.result["plugin"]["options"]["nb_features"] = 128;
  const auto entries = aggregate_scores(in);
  ASSERT_EQ(entries.size(), 1u) << "the same deviation on every task";
  EXPECT_FALSE(entries[0].reference->used);
  EXPECT_EQ(entries[0].options, json({{"nb_features", 128}}));
  EXPECT_EQ(entries[0].reference->differs.size(), 5u);
}

TEST(LeaderboardReference, ThirdPartyAndUnknownPluginsAreNotMarked) {
  // A plugin called performer that is not the host's own: run records null.
  std::vector<ScoreInput> in;
  for (const auto& t : lra_average_tasks())
    in.push_back(result("performer", t, {{"kernel", "softmax"}, {"nb_features", 256}}, nullptr));
  const auto third = aggregate_scores(in);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_FALSE(third[0].reference);
  EXPECT_EQ(third[0].options, json({{"kernel", "softmax"}, {"nb_features", 256}})) << "options as recorded";
  EXPECT_TRUE(to_json(third[0])["reference_settings"].is_null());
  // A name the table does not know.
  const auto mine = aggregate_scores({result("my_mixer", "listops", {{"window", 3}}, nullptr)});
  EXPECT_FALSE(mine[0].reference);
  // A result written before the field existed: not known to be the host's own, not marked.
  ScoreInput old =
      result("performer", "text", {{"kernel", "softmax"}, {"nb_features", 256}, {"redraw", 0}, {"chunk", 64}}, nullptr);
  old.result["plugin"].erase("reference_settings");
  EXPECT_FALSE(aggregate_scores({old})[0].reference);
  // A built-in's result claiming another table than any compiled in is compared
  // with the one its manifest names.
  ScoreInput other = result("performer", "text", reference_options("performer", "text"),
                            {{"table", "reference-mixers/lra-v9.toml"}, {"used", false}});
  const auto judged = aggregate_scores({other});
  ASSERT_TRUE(judged[0].reference);
  EXPECT_TRUE(judged[0].reference->used);
  EXPECT_EQ(judged[0].reference->table, kReferenceTableFile);
}

// Release lra-v1.3: the manifest names the table, so a result cannot pick an
// older, laxer one. local ran without LRA's masked query rows and claims
// lra-v1.2's table (where that was the setting): under an lra-v1.3 manifest it
// is judged against lra-v1.3 and differs; a result whose manifest names no
// table (releases before lra-v1.3) keeps the table it ran under.
TEST(LeaderboardReference, TheTableIsTheOneTheManifestNamesNotTheClaimedOne) {
  const ReferenceTable* v12 = find_reference_table(kTableOfManifestsWithoutKey);
  ASSERT_NE(v12, nullptr);
  const json lax = v12->entry("local", "pathfinder", false)->values();
  ASSERT_EQ(lax["mask_queries"], false);
  ScoreInput forged = result("local", "pathfinder", lax, {{"table", kTableOfManifestsWithoutKey}, {"used", true}});
  auto judged = aggregate_scores({forged});
  ASSERT_TRUE(judged[0].reference);
  EXPECT_FALSE(judged[0].reference->used);
  EXPECT_EQ(judged[0].reference->table, kReferenceTableFile);
  EXPECT_EQ(judged[0].reference->differs.at("pathfinder"), std::vector<std::string>{"mask_queries"});
  // The same options under a manifest that names no table: lra-v1.2's settings, used.
  ScoreInput before = forged;
  before.result["config"]["rules"].erase("reference_settings");
  judged = aggregate_scores({before});
  EXPECT_TRUE(judged[0].reference->used);
  EXPECT_EQ(judged[0].reference->table, kTableOfManifestsWithoutKey);
  // ... and an older table it claims (lra-v1.1, before mask_queries existed) is
  // the one its host had: its options, without the option, used that table.
  ScoreInput older = before;
  older.result["plugin"]["reference_settings"]["table"] = "reference-mixers/lra-v1.1.toml";
  older.result["plugin"]["options"].erase("mask_queries");
  judged = aggregate_scores({older});
  EXPECT_TRUE(judged[0].reference->used);
  EXPECT_EQ(judged[0].reference->table, "reference-mixers/lra-v1.1.toml");
  // A claim of the newest table without a manifest naming it is not taken.
  ScoreInput claims_new = before;
  claims_new.result["plugin"]["reference_settings"]["table"] = kReferenceTableFile;
  judged = aggregate_scores({claims_new});
  EXPECT_EQ(judged[0].reference->table, kTableOfManifestsWithoutKey);
}

TEST(LeaderboardReference, SmokeOverridesOnlyForOpenSmokeResults) {
  // linformer on Image: learned projection officially, fixed on the smoke preset.
  json smoke = reference_table().entry("linformer", "image", true)->values();
  const auto open = aggregate_scores({result("linformer", "image", smoke, claim(true), 0.5, "open")});
  EXPECT_TRUE(open[0].reference->used);
  // A closed result is always compared with the official entry.
  const auto closed = aggregate_scores({result("linformer", "image", smoke, claim(true), 0.5, "closed")});
  EXPECT_FALSE(closed[0].reference->used);
  EXPECT_EQ(closed[0].reference->differs.at("image"), std::vector<std::string>{"projection"});
}

TEST(LeaderboardReference, PagesShowTheMarker) {
  auto in = performer_suite();
  in.push_back(result("performer", "listops",
                      {{"kernel", "relu"}, {"nb_features", 0}, {"redraw", 0}, {"chunk", 64}, {"mask_keys", true}},
                      claim(true), 0.2));
  in.push_back(result("my_mixer", "listops", json::object(), nullptr, 0.3));
  const Leaderboard board = board_of(aggregate_scores(in));
  const std::string md = leaderboard_markdown(board);
  EXPECT_NE(md.find("performer 1.0.0 (abperformer) ✓ LRA reference settings"), std::string::npos) << md;
  EXPECT_NE(md.find("✗ not the LRA reference settings (listops: kernel, nb_features, redraw)"), std::string::npos)
      << md;
  EXPECT_EQ(md.find("my_mixer 1.0.0 (abmy_mixer) ✓"), std::string::npos) << md;
  const std::string html = leaderboard_html(board);
  EXPECT_NE(html.find("<span class=\"refset yes\""), std::string::npos);
  EXPECT_NE(html.find("<span class=\"refset no\""), std::string::npos);
  EXPECT_NE(html.find(kReferenceTableFile), std::string::npos) << "the tooltip names the table";
  const json j = leaderboard_json(board);
  int marked = 0, unmarked = 0;
  for (const auto& e : j["closed"]) (e["reference_settings"].is_null() ? unmarked : marked)++;
  EXPECT_EQ(marked, 2);
  EXPECT_EQ(unmarked, 1);
}
