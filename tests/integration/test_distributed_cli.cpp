// Data-parallel training on c10d (Gloo on CPU): two ranks on 127.0.0.1 give
// the training losses of one process with the same global batch and seed.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;

// Dropout off here; with dropout on the ranks draw the masks of the whole
// batch (lra/dropout.h) and match too: test_procs_adversarial_cli.cpp.
const std::string kRun =
    "run --plugin transformer --task listops --preset smoke --set train.steps=60 --set train.eval_every=30 "
    "--set model.dropout=0 --set model.attention_dropout=0 --threads 1";

TEST(Distributed, TwoGlooRanksMatchOneProcess) {
  TempDir d;
  auto single = lrahost(kRun + " --out " + (d.path() / "one").string());
  ASSERT_EQ(single.code, 0) << single.output;

  const std::string port = std::to_string(20000 + getpid() % 20000);
  const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port;
  const auto two = d.path() / "two";
  const pid_t rank1 = spawn_lrahost(kRun + " --out " + two.string(), d.path() / "rank1.log", env + " RANK=1");
  ASSERT_GT(rank1, 0);
  auto rank0 = lrahost(kRun + " --out " + two.string(), env + " RANK=0");
  int status = 0;
  waitpid(rank1, &status, 0);
  ASSERT_EQ(rank0.code, 0) << rank0.output;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(d.path() / "rank1.log");
  EXPECT_NE(rank0.output.find("rank 0 of 2 (gloo"), std::string::npos) << rank0.output;

  const auto a = nlohmann::json::parse(read_text(d.path() / "one" / "result.json"));
  const auto b = nlohmann::json::parse(read_text(two / "result.json"));
  ASSERT_EQ(a["history"].size(), b["history"].size());
  for (size_t i = 0; i < a["history"].size(); ++i) {
    const double x = a["history"][i]["train_loss"], y = b["history"][i]["train_loss"];
    EXPECT_NEAR(x, y, 1e-5 * std::abs(x)) << "report " << i;
  }
  EXPECT_EQ(b["distributed"]["world_size"], 2);
  EXPECT_EQ(b["distributed"]["backend"], "gloo");
  EXPECT_EQ(a["distributed"]["world_size"], 1);
  EXPECT_NEAR(a["metrics"]["test_accuracy"].get<double>(), b["metrics"]["test_accuracy"].get<double>(), 0.005);

  // Launched as a data-parallel job of one rank (WORLD_SIZE=1, as torchrun
  // --nproc-per-node 1 does): a process group of one (NCCL on a GPU, which
  // scripts/gpu-check runs this way), the single process's exact losses.
  const auto one_rank = d.path() / "one-rank";
  auto group = lrahost(kRun + " --out " + one_rank.string(), "WORLD_SIZE=1 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                                                                 std::to_string(20000 + (getpid() + 3) % 20000));
  ASSERT_EQ(group.code, 0) << group.output;
  EXPECT_NE(group.output.find("rank 0 of 1 (gloo"), std::string::npos) << group.output;
  const auto c = nlohmann::json::parse(read_text(one_rank / "result.json"));
  EXPECT_EQ(c["distributed"]["backend"], "gloo");
  EXPECT_EQ(c["distributed"]["world_size"], 1);
  EXPECT_EQ(a["history"], c["history"]);
  EXPECT_EQ(a["metrics"], c["metrics"]);
}

// Ranks agree or nobody trains: a rank started differently stops every rank
// with exit 4 naming the field, before the first step, and no result is written.
void expect_ranks_refused(const std::string& rank1_extra, const std::string& field) {
  TempDir d;
  const std::string port = std::to_string(20000 + (getpid() + 7919) % 20000);
  const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port;
  const auto out = d.path() / "two";
  const pid_t rank1 =
      spawn_lrahost(kRun + " --out " + out.string() + " " + rank1_extra, d.path() / "rank1.log", env + " RANK=1");
  ASSERT_GT(rank1, 0);
  auto rank0 = lrahost(kRun + " --out " + out.string(), env + " RANK=0");
  int status = 0;
  waitpid(rank1, &status, 0);
  const std::string log1 = read_text(d.path() / "rank1.log");
  EXPECT_EQ(rank0.code, 4) << rank0.output;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 4) << log1;
  for (const std::string& text : {rank0.output, log1}) {
    EXPECT_NE(text.find("the ranks were not started with the same run, so none trains"), std::string::npos) << text;
    EXPECT_NE(text.find("rank 1's " + field + " is "), std::string::npos) << text;
  }
  EXPECT_FALSE(std::filesystem::exists(out / "result.json"));
  EXPECT_EQ(rank0.output.find("step "), std::string::npos) << "a rank trained: " << rank0.output;
}

TEST(Distributed, ARankWithAnotherLearningRateStopsEveryRank) {
  expect_ranks_refused("--set train.lr=5.0", "config.train.lr");
}

TEST(Distributed, ARankWithAnotherSeedStopsEveryRank) { expect_ranks_refused("--seed 1", "seed"); }

TEST(Distributed, AWorldSizeThatDoesNotDivideTheBatchIsRefused) {
  TempDir d;
  auto o = lrahost(kRun + " --out " + (d.path() / "x").string(), "WORLD_SIZE=3 RANK=0 MASTER_PORT=29999");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("world size 3 does not divide"), std::string::npos) << o.output;
  auto bad = lrahost(kRun + " --out " + (d.path() / "y").string(), "WORLD_SIZE=2 RANK=5");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("rank 5"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(d.path() / "x"));
}

}  // namespace
}  // namespace lra::test
