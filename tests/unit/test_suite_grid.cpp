// runs/suite_grid.h: a suite runs every point of a manifest's [grid] and, per
// point of the model's axes, reports the training point with the best
// validation accuracy — never the one with the best test accuracy.
#include <tuple>

#include <gtest/gtest.h>

#include "manifest/presets.h"
#include "runs/suite_grid.h"

namespace lra::host {
namespace {

using nlohmann::json;

TEST(SuiteGrid, EveryPointOfTheProductFirstAxisSlowest) {
  const auto points = grid_points(load_preset("mqar", "official"));
  ASSERT_EQ(points.size(), 12u);  // 3 widths x 4 learning rates
  EXPECT_EQ(points[0].sets(), (std::vector<std::string>{"model.d_model=64", "train.lr=0.001"}));
  EXPECT_EQ(points[1].sets(), (std::vector<std::string>{"model.d_model=64", "train.lr=0.0031622776601683794"}));
  EXPECT_EQ(points[4].sets(), (std::vector<std::string>{"model.d_model=128", "train.lr=0.001"}));
  EXPECT_EQ(points[11].folder(), "d_model-256_lr-0.03162277660168379");
  EXPECT_EQ(points[11].model_label(), "d_model 256");
  EXPECT_EQ(points[11].train_label(), "lr 0.03162277660168379");
  // Each point, applied as the suite's runs apply it, is a point of the grid: no override.
  for (const auto& p : points) {
    Manifest m = load_preset("mqar", "official");
    for (const auto& s : p.sets()) EXPECT_TRUE(apply_override(m, s)) << s;
    EXPECT_TRUE(m.overrides.empty());
  }
  // Without a grid: one point, no folder of its own.
  const auto none = grid_points(load_preset("listops", "smoke"));
  ASSERT_EQ(none.size(), 1u);
  EXPECT_TRUE(none[0].sets().empty());
  EXPECT_EQ(none[0].folder(), "");
}

json run(const std::string& width, const std::string& lr, int64_t seed, double val, double test) {
  return {{"task", "mqar"},
          {"seed", seed},
          {"point", {{"model.d_model", width}, {"train.lr", lr}}},
          {"status", "ok"},
          {"best_val_accuracy", val},
          {"test_accuracy", test},
          {"run_dir", "runs/mqar/d_model-" + width + "_lr-" + lr + "/seed-" + std::to_string(seed)}};
}

TEST(SuiteGrid, ChoosesOnValidationMeanOverSeedsNeverOnTest) {
  json runs = json::array();
  // width 64: lr 0.01 has the better test accuracy, lr 0.001 the better validation mean.
  runs.push_back(run("64", "0.001", 0, 0.80, 0.50));
  runs.push_back(run("64", "0.001", 1, 0.70, 0.52));
  runs.push_back(run("64", "0.01", 0, 0.90, 0.95));
  runs.push_back(run("64", "0.01", 1, 0.50, 0.97));  // mean 0.70 < 0.75
  runs.push_back(run("128", "0.001", 0, 0.60, 0.60));
  json failed = run("128", "0.01", 0, 0, 0);
  failed["status"] = "failed";
  failed.erase("best_val_accuracy");
  failed.erase("test_accuracy");
  runs.push_back(failed);
  const json s = select_grid_points(runs);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0]["model"], "d_model 64");
  EXPECT_EQ(s[0]["selected"]["train"], "lr 0.001");
  EXPECT_DOUBLE_EQ(s[0]["selected"]["val_accuracy"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(s[0]["selected"]["test_accuracy"].get<double>(), 0.51);
  EXPECT_EQ(s[0]["selected"]["run_dirs"].size(), 2u);
  EXPECT_EQ(s[1]["model"], "d_model 128");  // the grid's order, not the labels' (128 < 64 as text)
  EXPECT_EQ(s[1]["selected"]["train"], "lr 0.001");
  EXPECT_EQ(s[1]["candidates"][1]["finished"], 0);
  const std::string md = grid_selection_markdown(s);
  EXPECT_NE(md.find("| d_model 64 | lr 0.001 | 75.00 | 51.00 | lr 0.001: 75.00; lr 0.01: 70.00 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("lr 0.01: no finished run"), std::string::npos) << md;
  // A model point with no finished run is listed, not dropped.
  json only_failed = json::array({failed});
  EXPECT_TRUE(select_grid_points(only_failed)[0]["selected"].is_null());
  EXPECT_NE(grid_selection_markdown(select_grid_points(only_failed)).find("none finished"), std::string::npos);
}

}  // namespace
}  // namespace lra::host

namespace lra::host {
namespace {

// MAD's score: the mean over the tasks of each one's chosen test accuracy.
TEST(SuiteGrid, SeveralTasksOfOneModelGetTheirMean) {
  json runs = json::array();
  for (const auto& [task, wd, val, test] :
       std::vector<std::tuple<std::string, std::string, double, double>>{{"mad_recall", "0", 0.6, 0.5},
                                                                          {"mad_recall", "0.1", 0.7, 0.6},
                                                                          {"mad_memorization", "0", 0.9, 0.8}})
    runs.push_back({{"task", task}, {"seed", 0}, {"point", {{"train.weight_decay", wd}}}, {"status", "ok"},
                    {"best_val_accuracy", val}, {"test_accuracy", test}, {"run_dir", task + "/" + wd}});
  const std::string md = grid_selection_markdown(select_grid_points(runs));
  EXPECT_NE(md.find("**Mean over the 2 tasks** (MAD's score): 70.00"), std::string::npos) << md;
}

}  // namespace
}  // namespace lra::host

namespace lra::host {
namespace {

// [settings] (MAD's difficulty settings): the training point is chosen per
// setting, a task's score is the mean over its settings (MAD's
// compute_model_mad_scores), and MAD's score the mean over tasks.
TEST(SuiteGrid, EachSettingChoosesItsOwnPointAndTheTaskScoresTheirMean) {
  json runs = json::array();
  for (const auto& [task, setting, wd, val, test] :
       std::vector<std::tuple<std::string, std::string, std::string, double, double>>{
           {"mad_recall", "baseline", "0", 0.9, 0.8},
           {"mad_recall", "baseline", "0.1", 0.8, 0.95},       // better on test, worse on validation
           {"mad_recall", "vocab_size-32", "0", 0.5, 0.4},
           {"mad_recall", "vocab_size-32", "0.1", 0.6, 0.6},   // this setting's choice: weight decay 0.1
           {"mad_memorization", "baseline", "0", 0.3, 0.3},
           {"mad_memorization", "vocab_size-512", "0", 0.2, 0.1}})
    runs.push_back({{"task", task}, {"setting", setting}, {"seed", 0}, {"point", {{"train.weight_decay", wd}}},
                    {"status", "ok"}, {"best_val_accuracy", val}, {"test_accuracy", test},
                    {"run_dir", task + "/" + setting + "/" + wd}});
  const json s = select_grid_points(runs);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0]["setting"], "baseline");
  EXPECT_EQ(s[0]["selected"]["train"], "weight_decay 0");
  EXPECT_EQ(s[1]["setting"], "vocab_size-32");
  EXPECT_EQ(s[1]["selected"]["train"], "weight_decay 0.1");
  const json scores = task_scores(s);
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_EQ(scores[0]["task"], "mad_recall");
  EXPECT_EQ(scores[0]["settings"], 2);
  EXPECT_DOUBLE_EQ(scores[0]["score"].get<double>(), (0.8 + 0.6) / 2);
  EXPECT_DOUBLE_EQ(scores[1]["score"].get<double>(), (0.3 + 0.1) / 2);
  const std::string md = grid_selection_markdown(s);
  EXPECT_NE(md.find("| vocab_size-32 | - | weight_decay 0.1 | 60.00 | 60.00 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| mad_recall | - | 2 | 70.00 |"), std::string::npos) << md;
  EXPECT_NE(md.find("**Mean over the 2 tasks** (MAD's score): 45.00"), std::string::npos) << md;
  // A setting none of whose runs finished leaves its task without a score, and MAD's score with none.
  json unfinished = runs;
  unfinished[4].erase("best_val_accuracy");
  unfinished[4].erase("test_accuracy");
  unfinished[4]["status"] = "failed";
  const json partial = task_scores(select_grid_points(unfinished));
  EXPECT_TRUE(partial[1]["score"].is_null());
  EXPECT_EQ(partial[1]["unfinished_settings"], 1);
  EXPECT_NE(grid_selection_markdown(select_grid_points(unfinished)).find("— (a task has no finished run)"),
            std::string::npos);
}

}  // namespace
}  // namespace lra::host
