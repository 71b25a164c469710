// bench/run_prediction.h, model/task_shape.h and bench/report_runs.h: what
// `lrahost bench --task` predicts a whole run costs — the split sizes of
// official and other manifests, the training loop's schedule, the arithmetic,
// the suite totals and the reports — and the static task shapes against the
// task plugins' own constants.
#include <gtest/gtest.h>

#include "bench/report_runs.h"
#include "bench/run_prediction.h"
#include "model/task_shape.h"
#include "image/cifar_reader.h"
#include "listops/expr.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "retrieval/aan_reader.h"
#include "text/imdb_reader.h"
#include "train/trainer.h"

namespace lra::host::bench {
namespace {

TEST(TaskShape, AgreesWithTheTaskPlugins) {
  EXPECT_EQ(lra_task_shape("listops").vocab_size, lra::listops::kVocabSize);
  EXPECT_EQ(lra_task_shape("listops").num_classes, lra::listops::kNumClasses);
  EXPECT_EQ(lra_task_shape("text").vocab_size, lra::text::kVocabSize);
  EXPECT_EQ(lra_task_shape("text").num_classes, lra::text::kNumClasses);
  EXPECT_EQ(lra_task_shape("retrieval").vocab_size, lra::retrieval::kVocabSize);
  EXPECT_EQ(lra_task_shape("retrieval").num_classes, lra::retrieval::kNumClasses);
  EXPECT_TRUE(lra_task_shape("retrieval").paired);
  EXPECT_FALSE(lra_task_shape("text").paired);
  EXPECT_EQ(lra_task_shape("image").vocab_size, lra::image::kVocabSize);
  EXPECT_EQ(lra_task_shape("image").num_classes, lra::image::kNumClasses);
  for (const char* t : {"pathfinder", "pathx"}) {
    EXPECT_EQ(lra_task_shape(t).vocab_size, 256) << t;
    EXPECT_EQ(lra_task_shape(t).num_classes, 2) << t;
  }
  try {
    lra_task_shape("forgetting");
    ADD_FAILURE() << "no error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("pathfinder"), std::string::npos) << e.what();
  }
}

TEST(RunPrediction, OfficialManifestsUseTheOfficialDataRegistry) {
  const auto listops = run_split_sizes(load_preset("listops", "official"));
  EXPECT_EQ(listops.train, 96000);
  EXPECT_EQ(listops.val, 2000);
  EXPECT_EQ(listops.test, 2000);
  EXPECT_NE(listops.source.find("official-data"), std::string::npos) << listops.source;
  const auto pathfinder = run_split_sizes(load_preset("pathfinder", "official"));
  EXPECT_EQ(pathfinder.val, 20000);
  EXPECT_EQ(pathfinder.test, 20000);
  const auto retrieval = run_split_sizes(load_preset("retrieval", "official"));
  EXPECT_EQ(retrieval.val, 18090);
  EXPECT_EQ(retrieval.test, 17437);
  for (const auto& t : preset_tasks("official")) {
    const auto s = run_split_sizes(load_preset(t, "official"));
    EXPECT_GT(s.val, 0) << t;
    EXPECT_GT(s.test, 0) << t;
  }
}

TEST(RunPrediction, OtherManifestsReadTheirDataSection) {
  const auto listops = run_split_sizes(load_preset("listops", "smoke"));
  EXPECT_EQ(listops.val, 500);
  EXPECT_EQ(listops.test, 1000);
  const auto pathfinder = run_split_sizes(load_preset("pathfinder", "smoke"));  // 4000 images, 80/10/10
  EXPECT_EQ(pathfinder.train, 3200);
  EXPECT_EQ(pathfinder.val, 400);
  EXPECT_EQ(pathfinder.test, 400);
  const auto text = run_split_sizes(load_preset("text", "smoke"));  // eval_examples = 500 each
  EXPECT_EQ(text.val, 500);
  EXPECT_EQ(text.test, 500);
  // An official manifest changed by --set is no longer the release: its own [data] counts.
  Manifest m = load_preset("listops", "official");
  apply_override(m, "data.val_size=300");
  EXPECT_EQ(run_split_sizes(m).val, 300);
  // "0 = all" takes the official counts.
  Manifest image = load_preset("image", "smoke");
  apply_override(image, "data.eval_examples=0");
  EXPECT_EQ(run_split_sizes(image).test, 10000);
  Manifest none = load_preset("listops", "smoke");
  none.data.clear();
  EXPECT_THROW(run_split_sizes(none), lra::Error);
}

TEST(RunPrediction, ScheduleFollowsTheTrainingLoop) {
  // ListOps official: 5000 steps, validation every 50 (the last step included),
  // 2000 validation and 2000 test examples in batches of 32.
  const Manifest m = load_preset("listops", "official");
  const RunSchedule s = run_schedule(m.train, run_split_sizes(m));
  EXPECT_EQ(s.train_steps, 5000);
  EXPECT_EQ(s.validations, 100);
  EXPECT_EQ(s.val_batches_each, 63);  // 62 full + one of 16
  EXPECT_EQ(s.test_batches, 63);
  EXPECT_EQ(s.eval_batches(), 100 * 63 + 63);
  // A step count that is not a multiple of eval_every still validates after the last step.
  TrainConfig t = m.train;
  t.steps = 120;
  EXPECT_EQ(run_schedule(t, run_split_sizes(m)).validations, 3);  // after 50, 100 and 120

  const RunPrediction p = predict_run(s, 10.0, 100.0);
  EXPECT_DOUBLE_EQ(p.train_s, 500.0);
  EXPECT_DOUBLE_EQ(p.eval_s, 63.63);
  EXPECT_DOUBLE_EQ(p.total_s(), 563.63);
  EXPECT_THROW(predict_run(s, 0.0, 1.0), lra::Error);
}

TaskRunEstimate estimate(const std::string& plugin, const std::string& task, double one_run_s, int64_t seeds,
                         bool ok = true) {
  TaskRunEstimate e;
  e.plugin = plugin;
  e.task = task;
  e.preset = "official";
  e.seeds = seeds;
  e.train.plugin = plugin;
  e.train.length = 1000;
  e.train.batch = 32;
  e.train.status = ok ? "ok" : "oom";
  if (!ok) e.train.error = "out of memory";
  e.train.steps_per_s = ok ? 1.0 : 0.0;
  e.eval_batches_per_s = ok ? 1.0 : 0.0;
  e.prediction = {one_run_s * 0.75, one_run_s * 0.25};
  return e;
}

TEST(RunPrediction, SuiteTotalsKeepPathXApart) {
  const std::vector<TaskRunEstimate> runs = {estimate("transformer", "listops", 100, 3),
                                             estimate("transformer", "text", 200, 3),
                                             estimate("transformer", "pathx", 1000, 3),
                                             estimate("performer", "listops", 50, 3),
                                             estimate("performer", "text", 0, 3, false)};
  const auto totals = suite_totals(runs);
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0].plugin, "transformer");
  EXPECT_DOUBLE_EQ(totals[0].lra_tasks_s, 900.0);
  EXPECT_TRUE(totals[0].pathx);
  EXPECT_DOUBLE_EQ(totals[0].pathx_s, 3000.0);
  EXPECT_TRUE(totals[0].complete);
  EXPECT_DOUBLE_EQ(totals[1].lra_tasks_s, 150.0);
  EXPECT_FALSE(totals[1].complete);  // text failed: not counted, and said so

  const auto j = run_estimates_json(runs);
  EXPECT_EQ(j["schema"], "lrahost.bench-runs/v1");
  EXPECT_DOUBLE_EQ(j["runs"][0]["predicted_s"]["all_seeds"].get<double>(), 300.0);
  EXPECT_TRUE(j["runs"][4]["predicted_s"].is_null());
  EXPECT_EQ(j["runs"][4]["status"], "oom");
  const std::string md = run_estimates_markdown(runs);
  EXPECT_NE(md.find("| transformer | pathx |"), std::string::npos) << md;
  EXPECT_NE(md.find("OOM"), std::string::npos) << md;
  EXPECT_NE(md.find("15 min 0 s for listops, text"), std::string::npos) << md;
  EXPECT_NE(md.find("50 min 0 s for Path-X"), std::string::npos) << md;
  EXPECT_NE(md.find("incomplete"), std::string::npos) << md;
}

TEST(RunPrediction, MarkdownKeepsPluginNamesInsideTheirCells) {
  // A plugin name comes from a loadable file: '|' would end its cell.
  const std::string md = run_estimates_markdown({estimate("my|mixer", "listops", 100, 3),
                                                 estimate("my|mixer", "pathx", 100, 3)});
  EXPECT_NE(md.find("| my\\|mixer | listops |"), std::string::npos) << md;
  EXPECT_NE(md.find("**my\\|mixer, predicted**"), std::string::npos) << md;
  EXPECT_EQ(md.find("| my|mixer"), std::string::npos) << md;
}

TEST(EvaluationPass, CappedOnlyByAMicroBatchThatSplitsTheBatch) {
  EXPECT_EQ(evaluation_pass(0, 32, 100), 100);   // no --micro-batch
  EXPECT_EQ(evaluation_pass(8, 32, 100), 8);     // micro-batching: passes of 8
  EXPECT_EQ(evaluation_pass(8, 32, 4), 4);       // never above eval_batch_size
  // result.json records timing.micro_batch = batch_size when the batch was not
  // split: re-evaluation then evaluates in eval_batch_size passes, as the run did.
  EXPECT_EQ(evaluation_pass(32, 32, 100), 100);
  EXPECT_EQ(evaluation_pass(64, 32, 100), 100);
}

TEST(RunPrediction, HumanDurations) {
  EXPECT_EQ(human_duration(42.4), "42 s");
  EXPECT_EQ(human_duration(192), "3 min 12 s");
  EXPECT_EQ(human_duration(7 * 3600 + 5 * 60 + 10), "7 h 05 min");
  EXPECT_EQ(human_duration(3 * 86400), "3.0 days");
  EXPECT_EQ(human_duration(-1), "-");
}

}  // namespace
}  // namespace lra::host::bench
