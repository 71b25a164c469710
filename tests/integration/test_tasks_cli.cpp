// Every LRA task end to end through the lrahost binary: `data check` accepts
// each real format (made here by test code, never real data), rejects corrupt
// files with exit 5, and a run of the task's smoke preset (shrunk further by
// --set so the test takes seconds) writes a result.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/data_fixtures.h"
#include "cli_harness.h"

using lra::test::lrahost;
using lra::test::read_text;
using lra::test::TempDir;
using nlohmann::json;

namespace {

std::string fingerprint_of(const std::string& output) {
  auto pos = output.find("fingerprint");
  return pos == std::string::npos ? "" : output.substr(pos, output.find('\n', pos) - pos);
}

// A smoke-preset run with the given extra overrides; returns the result file.
json smoke_run(const std::string& task, const std::string& data, const std::filesystem::path& out,
               const std::string& sets, const std::string& plugin = "transformer") {
  auto o = lrahost("run --plugin " + plugin + " --task " + task + " --preset smoke --threads 2 --data-dir " + data +
                   " --out " + out.string() + " " + sets);
  EXPECT_EQ(o.code, 0) << o.output;
  if (o.code != 0) return json();
  EXPECT_NE(o.output.find("test accuracy"), std::string::npos) << o.output;
  return json::parse(read_text(out / "result.json"));
}

void expect_sane_result(const json& r, const std::string& task, int64_t test_examples) {
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(r["task"]["name"], task);
  EXPECT_EQ(r["task"]["examples"]["test"], test_examples);
  EXPECT_EQ(r["task"]["data_fingerprint"].get<std::string>().rfind("sha256:", 0), 0u);
  const double acc = r["metrics"]["test_accuracy"];
  EXPECT_GE(acc, 0.0);
  EXPECT_LE(acc, 1.0);
}

const char* kShortTraining =
    " --set train.steps=6 --set train.eval_every=3 --set train.warmup=2 --set train.batch_size=8";

}  // namespace

TEST(TasksCli, TextChecksRunsAndRejectsAnEmptyReview) {
  TempDir dir;
  lra::test::write_imdb_fixture(dir.path(), 30, 20, 1);
  auto c = lrahost("data check --task text --data-dir " + dir.str());
  ASSERT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.output.find("60 examples"), std::string::npos) << c.output;  // train: 30 pos + 30 neg
  EXPECT_NE(c.output.find("40 examples"), std::string::npos) << c.output;  // test (= validation)
  EXPECT_NE(fingerprint_of(c.output), "");

  auto r = smoke_run("text", dir.str(), dir.path() / "run", std::string(kShortTraining) + " --set train.steps_per_cycle=6");
  expect_sane_result(r, "text", 40);
  EXPECT_EQ(r["task"]["examples"]["val"], 40);  // the test split doubles as validation, as in LRA

  // An empty review: exit 5, the file named; `run` says the same before training.
  const auto bad = dir.path() / "aclImdb" / "train" / "pos" / "999_9.txt";
  lra::test::write_file(bad, "");
  auto e = lrahost("data check --task text --data-dir " + dir.str());
  EXPECT_EQ(e.code, 5) << e.output;
  EXPECT_NE(e.output.find("999_9.txt"), std::string::npos) << e.output;
  auto er = lrahost("run --plugin transformer --task text --preset smoke --data-dir " + dir.str() + " --out " +
                    (dir.path() / "run2").string());
  EXPECT_EQ(er.code, 5) << er.output;
  EXPECT_NE(er.output.find("999_9.txt"), std::string::npos) << er.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "run2" / "result.json"));
}

TEST(TasksCli, TextMissingDataNamesTheExpectedLayout) {
  TempDir dir;
  auto o = lrahost("data check --task text --data-dir " + dir.str());
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("aclImdb"), std::string::npos) << o.output;
}

TEST(TasksCli, RetrievalChecksRunsTheTwoTowerModelAndRejectsABadRow) {
  TempDir dir;
  lra::test::write_aan_fixture(dir.path(), 64, 16, 24, 2);
  auto c = lrahost("data check --task retrieval --data-dir " + dir.str());
  ASSERT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.output.find("64 examples"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("paired"), std::string::npos) << c.output;

  auto r = smoke_run("retrieval", dir.str(), dir.path() / "run", kShortTraining);
  expect_sane_result(r, "retrieval", 24);

  lra::test::append_file(dir.path() / "new_aan_pairs.eval.tsv", "1\tonly\tthree columns\n");
  auto e = lrahost("data check --task retrieval --data-dir " + dir.str());
  EXPECT_EQ(e.code, 5) << e.output;
  EXPECT_NE(e.output.find("new_aan_pairs.eval.tsv:17"), std::string::npos) << e.output;  // FILE:LINE
}

TEST(TasksCli, ImageChecksRunsAndRejectsATruncatedBatch) {
  TempDir dir;
  lra::test::write_cifar_fixture(dir.path(), 20, 30, 3);  // 100 training records -> 90 / 10
  auto c = lrahost("data check --task image --data-dir " + dir.str());
  ASSERT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.output.find("90 examples"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("10 examples"), std::string::npos) << c.output;

  auto r = smoke_run("image", dir.str(), dir.path() / "run", std::string(kShortTraining) + " --set train.steps_per_cycle=6");
  expect_sane_result(r, "image", 30);

  const auto batch = dir.path() / "cifar-10-batches-bin" / "data_batch_3.bin";
  lra::test::resize_file(batch, 3073 * 20 - 100);
  auto e = lrahost("data check --task image --data-dir " + dir.str());
  EXPECT_EQ(e.code, 5) << e.output;
  EXPECT_NE(e.output.find("data_batch_3.bin"), std::string::npos) << e.output;
}

// The state-space mixers through every task's input path whose data cannot be
// generated (issue 20; ListOps, Pathfinder and Path-X are run by the smoke
// measurements): Text's CLS pooling, Retrieval's two towers, Image's pixel mask
// with holes inside the sequence. Synthetic stand-ins, so no accuracy claim.
TEST(TasksCli, StateSpaceMixersRunTextRetrievalAndImage) {
  TempDir dir;
  lra::test::write_imdb_fixture(dir.path() / "text", 30, 20, 1);
  lra::test::write_aan_fixture(dir.path() / "retrieval", 64, 16, 24, 2);
  lra::test::write_cifar_fixture(dir.path() / "image", 20, 30, 3);
  const std::string sets = std::string(kShortTraining) + " --set train.steps_per_cycle=6";
  for (const std::string plugin : {"s4d", "mamba2"})
    for (const auto& [task, test_examples] : {std::pair<std::string, int64_t>{"text", 40}, {"retrieval", 24}, {"image", 30}}) {
      SCOPED_TRACE(plugin + " on " + task);
      const auto r = smoke_run(task, (dir.path() / task).string(), dir.path() / (plugin + "-" + task), sets, plugin);
      expect_sane_result(r, task, test_examples);
      if (!r.is_null()) EXPECT_EQ(r["plugin"]["name"], plugin);
    }
}

TEST(TasksCli, PathfinderGeneratesChecksRunsAndRejectsACorruptImage) {
  TempDir dir;
  const std::string data = dir.str() + "/gen";
  auto g1 = lrahost("data generate pathfinder --n 60 --seed 5 --threads 2 --out " + data);
  ASSERT_EQ(g1.code, 0) << g1.output;
  auto g2 = lrahost("data generate pathfinder --n 60 --seed 5 --threads 1 --out " + dir.str() + "/gen1");
  ASSERT_EQ(g2.code, 0) << g2.output;
  auto c1 = lrahost("data check --task pathfinder --data-dir " + data);
  ASSERT_EQ(c1.code, 0) << c1.output;
  EXPECT_NE(c1.output.find("48 examples"), std::string::npos) << c1.output;  // 80% of 60
  EXPECT_NE(c1.output.find(" 6 examples"), std::string::npos) << c1.output;  // 10%
  auto c2 = lrahost("data check --task pathfinder --data-dir " + dir.str() + "/gen1");
  EXPECT_EQ(fingerprint_of(c1.output), fingerprint_of(c2.output));  // thread count does not matter

  // The smoke preset generates its own (smaller here) dataset on demand.
  auto r = smoke_run("pathfinder", dir.str() + "/cache", dir.path() / "run",
                     std::string(kShortTraining) + " --set train.steps_per_cycle=6 --set data.images=50");
  expect_sane_result(r, "pathfinder", 5);

  const auto png = std::filesystem::path(data) / "pathfinder32" / "curv_contour_length_14" / "imgs" / "0" / "sample_3.png";
  ASSERT_TRUE(std::filesystem::exists(png));
  lra::test::write_file(png, "not a png at all");
  auto e = lrahost("data check --task pathfinder --data-dir " + data);
  EXPECT_EQ(e.code, 5) << e.output;
  EXPECT_NE(e.output.find("sample_3.png"), std::string::npos) << e.output;
}

TEST(TasksCli, PathXRunsOn16kTokens) {
  TempDir dir;
  auto r = smoke_run("pathx", dir.str(), dir.path() / "run",
                     " --set data.images=20 --set train.steps=2 --set train.eval_every=2 --set train.warmup=1"
                     " --set train.steps_per_cycle=2 --set train.batch_size=1");
  expect_sane_result(r, "pathx", 2);
  EXPECT_EQ(r["config"]["model"]["max_len"], 16384);
}

TEST(TasksCli, MissingPathfinderDataSaysHowToGetIt) {
  TempDir dir;
  auto o = lrahost("data check --task pathfinder --data-dir " + dir.str());
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("curv_contour_length_14"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("lrahost data generate pathfinder"), std::string::npos) << o.output;
}
