// `lrahost sweep`: the plan and job-array script, local runs, --collect, and
// a real submission to a single-node Slurm started for the test (skipped,
// with the reason, where one cannot start).
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kQuick = " --preset smoke --set train.steps=20 --set train.eval_every=10";

TEST(Sweep, WritesAJobArrayWithTheResources) {
  TempDir d;
  const auto dir = d.path() / "s";
  auto o = lrahost("sweep --plugins transformer,performer --tasks listops,text --seeds 0,1,2 --out " + dir.string() +
                   " --slurm --gpus 1 --cpus 8 --time 04:00:00 --partition gpu --mem 32G --max-parallel 4");
  ASSERT_EQ(o.code, 0) << o.output;
  const auto plan = json::parse(read_text(dir / "sweep.json"));
  ASSERT_EQ(plan["entries"].size(), 12u);  // 2 plugins x 2 tasks x 3 seeds
  EXPECT_EQ(plan["entries"][11]["seed"], 2);
  const std::string sb = read_text(dir / "sweep.sbatch");
  for (const char* want : {"#SBATCH --array=0-11%4", "#SBATCH --gres=gpu:1", "#SBATCH --cpus-per-task=8",
                           "#SBATCH --time=04:00:00", "#SBATCH --partition=gpu", "#SBATCH --mem=32G",
                           "sweep --run-index \"$SLURM_ARRAY_TASK_ID\""})
    EXPECT_NE(sb.find(want), std::string::npos) << want << "\n" << sb;
  EXPECT_FALSE(fs::exists(dir / "runs"));  // nothing ran: not submitted

  auto again = lrahost("sweep --plugins transformer --tasks listops --out " + dir.string() + " --slurm");
  EXPECT_EQ(again.code, 2) << again.output;
  auto seeds = lrahost("sweep --plugins transformer --tasks listops --seeds 0,x --out " + (d.path() / "t").string());
  EXPECT_EQ(seeds.code, 2) << seeds.output;
  EXPECT_NE(seeds.output.find("'x'"), std::string::npos) << seeds.output;
}

TEST(Sweep, SeveralGpusMakeOneDataParallelRankPerGpu) {
  TempDir d;
  const auto dir = d.path() / "s";
  auto o = lrahost("sweep --plugins transformer --tasks listops --seeds 0 --out " + dir.string() + " --slurm --gpus 4");
  ASSERT_EQ(o.code, 0) << o.output;
  const std::string sb = read_text(dir / "sweep.sbatch");
  for (const char* want : {"#SBATCH --nodes=1", "#SBATCH --ntasks=4", "#SBATCH --gpus-per-task=1",
                           "export MASTER_ADDR=$(scontrol show hostnames", "export MASTER_PORT=", "exec srun "})
    EXPECT_NE(sb.find(want), std::string::npos) << want << "\n" << sb;
  EXPECT_EQ(sb.find("--gres=gpu"), std::string::npos) << sb;
}

TEST(Sweep, RunsHereAndCollectsWithFailuresRecorded) {
  TempDir d;
  const auto dir = d.path() / "s";
  // no_such_mixer fails; the sweep goes on and the table records it.
  auto o = lrahost("sweep --plugins transformer,no_such_mixer --tasks listops --seeds 0,1 --out " + dir.string() + kQuick);
  ASSERT_EQ(o.code, 3) << o.output;  // the first failed run's exit code (a plugin that cannot be found)
  EXPECT_NE(o.output.find("2 of 4 runs failed"), std::string::npos) << o.output;
  auto c = lrahost("sweep --collect " + dir.string());
  ASSERT_EQ(c.code, 0) << c.output;
  const auto lb = json::parse(read_text(dir / "leaderboard.json"));
  EXPECT_EQ(lb["missing"].size(), 2u);
  EXPECT_EQ(lb["rows"][0]["plugin"], "transformer");
  EXPECT_EQ(lb["rows"][0]["tasks"]["listops"]["seeds"], json({0, 1}));  // leaderboard/scores.h: the trial seeds
  EXPECT_NE(read_text(dir / "leaderboard.md").find("| transformer |"), std::string::npos);
}

class SlurmCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = std::make_unique<TempDir>();
    const std::string tool = std::string(LRA_SOURCE_DIR) + "/tests/tools/slurm-single-node";
    const std::string cmd = tool + " start " + state_->str() + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    char buf[1024];
    while (p && fgets(buf, sizeof buf, p)) out_ += buf;
    const int rc = p ? pclose(p) : -1;
    if (rc != 0) GTEST_SKIP() << "no single-node Slurm here: " << out_;
    conf_ = out_.substr(0, out_.find('\n'));
  }
  void TearDown() override {
    if (state_) std::system((std::string(LRA_SOURCE_DIR) + "/tests/tools/slurm-single-node stop " + state_->str()).c_str());
  }
  std::unique_ptr<TempDir> state_;
  std::string out_, conf_;
};

TEST_F(SlurmCluster, SubmitsAJobArrayAndCollectsItsResults) {
  TempDir d;
  const auto dir = d.path() / "s";
  const std::string env = "SLURM_CONF=" + conf_;
  auto o = lrahost("sweep --plugins transformer,linear_transformer --tasks listops --seeds 0,1 --out " + dir.string() +
                   kQuick + " --slurm --submit --cpus 1", env);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("submitted Slurm job"), std::string::npos) << o.output;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  auto done = [&] {
    int n = 0;
    const json plan = json::parse(read_text(dir / "sweep.json"));  // named: a temporary would dangle in the loop
    for (const auto& e : plan["entries"])
      n += fs::exists(fs::path(e["out"].get<std::string>()) / "result.json");
    return n;
  };
  while (done() < 4 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (done() < 4) {
    std::string logs;
    for (const auto& f : fs::directory_iterator(dir / "logs")) logs += f.path().string() + ":\n" + read_text(f.path());
    FAIL() << "array tasks did not finish\n" << logs << "\nslurmctld:\n" << read_text(state_->path() / "log" / "slurmctld.log")
           << "\nslurmd:\n" << read_text(state_->path() / "log" / "slurmd.log");
  }
  auto c = lrahost("sweep --collect " + dir.string());
  ASSERT_EQ(c.code, 0) << c.output;
  const auto lb = json::parse(read_text(dir / "leaderboard.json"));
  EXPECT_TRUE(lb["missing"].empty());
  ASSERT_EQ(lb["rows"].size(), 2u);
  for (const auto& row : lb["rows"]) EXPECT_EQ(row["tasks"]["listops"]["seeds"], json({0, 1}));
  // The runs recorded their trial seeds.
  EXPECT_EQ(json::parse(read_text(dir / "runs" / "listops-transformer-seed1" / "result.json"))["seed"], 1);
}

}  // namespace
}  // namespace lra::test
