// Checkpoint and resume: a run killed with SIGKILL after its first checkpoint
// and resumed ends with exactly the metrics of an uninterrupted run; a resume
// against another manifest, plugin or seed is refused with exit 4.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;

const std::string kRun =
    "run --plugin transformer --task listops --preset smoke --set train.steps=300 --set train.eval_every=100 "
    "--set train.checkpoint_every=100 --threads 2";

nlohmann::json result(const fs::path& dir) { return nlohmann::json::parse(read_text(dir / "result.json")); }

TEST(Checkpoint, KilledAndResumedEqualsUninterrupted) {
  TempDir d;
  const auto whole = d.path() / "whole", killed = d.path() / "killed";
  auto full = lrahost(kRun + " --out " + whole.string());
  ASSERT_EQ(full.code, 0) << full.output;
  EXPECT_TRUE(fs::exists(whole / "checkpoints" / "step-200"));  // the two newest are kept
  EXPECT_TRUE(fs::exists(whole / "checkpoints" / "step-100"));

  const pid_t pid = spawn_lrahost(kRun + " --out " + killed.string(), d.path() / "killed.log");
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (!fs::exists(killed / "checkpoints" / "step-100") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(killed / "checkpoints" / "step-100")) << read_text(d.path() / "killed.log");
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_FALSE(fs::exists(killed / "result.json")) << "the run finished before it could be killed";

  // Starting afresh over an unfinished run is refused; --resume continues it.
  auto fresh = lrahost(kRun + " --out " + killed.string());
  EXPECT_EQ(fresh.code, 2) << fresh.output;
  EXPECT_NE(fresh.output.find("--resume"), std::string::npos) << fresh.output;
  auto resumed = lrahost(kRun + " --resume --out " + killed.string());
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;

  const auto a = result(whole), b = result(killed);
  EXPECT_EQ(a["metrics"], b["metrics"]);
  EXPECT_EQ(a["history"], b["history"]);
  EXPECT_TRUE(b["timing"]["resumed_from"].is_string());
}

// --stop-after: each time slot ends at a report step with a checkpoint and
// exit 9, no result; slots resumed one after another end exactly where an
// uninterrupted run does.
TEST(Checkpoint, StoppedAfterSecondsAndResumedEqualsUninterrupted) {
  TempDir d;
  const auto whole = d.path() / "whole", sliced = d.path() / "sliced";
  auto full = lrahost(kRun + " --out " + whole.string());
  ASSERT_EQ(full.code, 0) << full.output;

  auto first = lrahost(kRun + " --stop-after 0.001 --out " + sliced.string());
  ASSERT_EQ(first.code, 9) << first.output;
  EXPECT_NE(first.output.find("stopped at update 50 of 300"), std::string::npos) << first.output;
  EXPECT_TRUE(fs::exists(sliced / "checkpoints" / "step-50"));
  EXPECT_FALSE(fs::exists(sliced / "result.json"));
  const std::string log = read_text(sliced / "run.log");
  EXPECT_NE(log.substr(log.rfind("] ")).find("--resume"), std::string::npos) << log;  // its last line says what to do

  auto second = lrahost(kRun + " --stop-after 0.001 --resume --out " + sliced.string());
  ASSERT_EQ(second.code, 9) << second.output;
  EXPECT_NE(second.output.find("stopped at update 100 of 300"), std::string::npos) << second.output;
  auto last = lrahost(kRun + " --resume --out " + sliced.string());
  ASSERT_EQ(last.code, 0) << last.output;

  const auto a = result(whole), b = result(sliced);
  EXPECT_EQ(a["metrics"], b["metrics"]);
  EXPECT_EQ(a["history"], b["history"]);
  EXPECT_EQ(a["division"], b["division"]);
  EXPECT_EQ(b["timing"]["resumed_from"], "step-100");

  auto bad = lrahost(kRun + " --stop-after 0 --out " + (d.path() / "bad").string());
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_FALSE(fs::exists(d.path() / "bad"));
}

TEST(Checkpoint, ResumeAgainstAnotherRunIsRefused) {
  TempDir d;
  const auto dir = d.path() / "run";
  // Make a run with a checkpoint, then remove its result so it looks unfinished.
  auto first = lrahost(kRun + " --out " + dir.string());
  ASSERT_EQ(first.code, 0) << first.output;
  fs::remove(dir / "result.json");
  for (const std::string& change : {std::string(" --seed 7"), std::string(" --set train.lr=0.01")}) {
    auto o = lrahost(kRun + change + " --resume --out " + dir.string());
    EXPECT_EQ(o.code, 4) << change << "\n" << o.output;
    EXPECT_NE(o.output.find("resume with the same"), std::string::npos) << o.output;
  }
  auto other = lrahost("run --plugin linear_transformer --task listops --preset smoke --set train.steps=300 "
                       "--set train.eval_every=100 --set train.checkpoint_every=100 --resume --out " + dir.string());
  EXPECT_EQ(other.code, 4) << other.output;
  EXPECT_NE(other.output.find("plugin"), std::string::npos) << other.output;
  auto none = lrahost(kRun + " --resume --out " + (d.path() / "empty").string());
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("no complete checkpoint"), std::string::npos) << none.output;
}

}  // namespace
}  // namespace lra::test
