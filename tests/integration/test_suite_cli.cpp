// `lrahost suite`: every task and seed as separate runs, failures recorded,
// the summary scored over seeds; `lrahost verify` on the runs it leaves.
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(Suite, RunsEverySeedRecordsAFailingTaskAndScoresOverSeeds) {
  TempDir d;
  const auto out = d.path() / "suite";
  // Text has no data under this root: both its runs fail; ListOps goes on.
  const std::string args = "suite --plugin transformer --tasks listops,text --seeds 0,1 --preset smoke --threads 1 "
                           "--data-dir " + d.str() + "/data --out " + out.string() + tiny_sets();
  auto o = lrahost(args);
  EXPECT_NE(o.code, 0) << o.output;  // the first failed run's exit code
  EXPECT_NE(o.output.find("[4/4, "), std::string::npos) << "progress and time left: " << o.output;
  EXPECT_NE(o.output.find("] text, seed 1: FAILED"), std::string::npos) << o.output;

  const json s = json::parse(read_text(out / "suite.json"));
  EXPECT_EQ(s["schema"], "lrahost.suite/v1");
  ASSERT_EQ(s["runs"].size(), 4u);
  std::vector<double> acc;
  for (const auto& r : s["runs"]) {
    if (r["task"] == "listops") {
      ASSERT_EQ(r["status"], "ok") << r.dump();
      const json res = json::parse(read_text(out / r["run_dir"].get<std::string>() / "result.json"));
      EXPECT_EQ(res["seed"], r["seed"]);
      acc.push_back(res["metrics"]["test_accuracy"].get<double>());
    } else {
      EXPECT_EQ(r["status"], "failed");
      EXPECT_NE(r["exit_code"].get<int>(), 0);
      EXPECT_FALSE(r["error"].get<std::string>().empty());
      EXPECT_EQ(o.code, r["exit_code"].get<int>());
      EXPECT_TRUE(fs::exists(out / r["log"].get<std::string>()));
    }
  }
  ASSERT_EQ(acc.size(), 2u);
  ASSERT_EQ(s["scores"].size(), 1u);
  const json& listops = s["scores"][0]["tasks"]["listops"];
  const double mean = (acc[0] + acc[1]) / 2;
  EXPECT_NEAR(listops["mean"].get<double>(), mean, 1e-12);
  EXPECT_NEAR(listops["std"].get<double>(), std::abs(acc[0] - acc[1]) / std::sqrt(2.0), 1e-12);  // sample std, n = 2
  EXPECT_FALSE(s["scores"][0]["tasks"].contains("text"));
  EXPECT_TRUE(s["scores"][0]["lra_average"].is_null());  // not all five tasks
  const std::string md = read_text(out / "suite.md");
  EXPECT_NE(md.find("## Failed runs (2 of 4)"), std::string::npos) << md;
  EXPECT_NE(md.find("| LRA paper, Transformer | Table 1 | 36.37 | 64.27 | 54.39 |"), std::string::npos) << md;

  // A finished suite is not overwritten.
  auto again = lrahost(args);
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("suite.json exists"), std::string::npos) << again.output;

  // An interrupted one (no summary yet) keeps the runs it has and retries the rest.
  fs::remove(out / "suite.json");
  auto resumed = lrahost(args);
  EXPECT_NE(resumed.output.find("[1/4] listops, seed 0: kept from before"), std::string::npos) << resumed.output;
  const json s2 = json::parse(read_text(out / "suite.json"));
  EXPECT_EQ(s2["scores"][0]["tasks"]["listops"]["mean"], listops["mean"]);

  // --retry-failed: the failed runs start again in their folders (their logs
  // go on), the finished ones are kept, the summary is written anew.
  EXPECT_NE(again.output.find("--retry-failed"), std::string::npos) << again.output;
  const std::string text_log = read_text(out / "logs" / "text-seed-1.log");
  auto retried = lrahost(args + " --retry-failed");
  EXPECT_NE(retried.code, 0) << retried.output;  // text still has no data
  // Kept runs take no time: no estimate until a run has been tried in this process.
  EXPECT_NE(retried.output.find("[2/4] listops, seed 1: kept from before"), std::string::npos) << retried.output;
  EXPECT_NE(retried.output.find("[4/4, "), std::string::npos) << retried.output;
  EXPECT_NE(retried.output.find("text, seed 1: FAILED"), std::string::npos) << retried.output;
  EXPECT_GT(read_text(out / "logs" / "text-seed-1.log").size(), text_log.size()) << "the failed run did not start again";
  const json s3 = json::parse(read_text(out / "suite.json"));
  for (const auto& r : s3["runs"]) EXPECT_EQ(r["status"], r["task"] == "listops" ? "reused" : "failed") << r.dump();

  // A run written by another host build: resuming would mix builds in one
  // submission (verify refuses that), so the suite is refused first.
  {
    const fs::path kept = out / "runs" / "listops" / "seed-0" / "result.json";
    const std::string original = read_text(kept);
    json other = json::parse(original);
    other["host"]["git_revision"] = "0123456789abcdef0123456789abcdef01234567";
    write_text(kept, other.dump(2));
    auto mixed = lrahost(args + " --retry-failed");
    EXPECT_EQ(mixed.code, 2) << mixed.output;
    EXPECT_NE(mixed.output.find("was written by lrahost build 0123456789ab"), std::string::npos) << mixed.output;
    EXPECT_NE(mixed.output.find("one build"), std::string::npos) << mixed.output;
    write_text(kept, original);
  }

  // The runs as a submission: open results from one host build and one plugin build.
  auto v = lrahost("verify " + (out / "runs").string());
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("submission (2 results): open, valid"), std::string::npos) << v.output;
}

TEST(Suite, RefusesBeforeAnyRun) {
  TempDir d;
  const auto out = d.path() / "suite";
  auto plugin = lrahost("suite --plugin no_such_mixer --tasks listops --preset smoke --out " + out.string());
  EXPECT_EQ(plugin.code, 3) << plugin.output;
  auto task = lrahost("suite --plugin transformer --tasks listops,chess --preset smoke --out " + out.string());
  EXPECT_EQ(task.code, 2) << task.output;
  EXPECT_NE(task.output.find("'chess'"), std::string::npos) << task.output;
  auto seeds = lrahost("suite --plugin transformer --tasks listops --seeds 0,0 --preset smoke --out " + out.string());
  EXPECT_EQ(seeds.code, 2) << seeds.output;
  EXPECT_NE(seeds.output.find("seed 0 appears twice"), std::string::npos) << seeds.output;
  EXPECT_FALSE(fs::exists(out)) << "nothing may be written before the runs start";
}

}  // namespace
}  // namespace lra::test

namespace lra::test {
namespace {

// A rebuild or an upgrade in the middle of a suite replaces lrahost's file:
// the runs still to come start the program the suite started with (one
// build's results), not whatever the path now holds.
TEST(Suite, RunsStillToComeStartTheBuildTheSuiteStartedWith) {
  TempDir d;
  const fs::path built = LRAHOST_BIN;
  const fs::path bin = d.path() / "bin" / "lrahost";
  fs::create_directories(bin.parent_path());
  fs::copy_file(built, bin);
  fs::create_directories(d.path() / "lib" / "lrahost");  // the built-in plugins, where a copy looks for them
  fs::create_directory_symlink(built.parent_path().parent_path() / "lib" / "lrahost" / "plugins",
                               d.path() / "lib" / "lrahost" / "plugins");
  const auto out = d.path() / "suite";
  const auto log = d.path() / "suite.log";
  const std::string cmd = "exec " + bin.string() + " suite --plugin transformer --tasks listops --seeds 0,1 " +
                          "--preset smoke --threads 1 --data-dir " + d.str() + "/data --out " + out.string() +
                          tiny_sets() + " > " + log.string() + " 2>&1";
  pid_t pid = -1;
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  ASSERT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char* const*>(argv), environ), 0);
  // The first run has started: replace the file as a package manager does (a new file renamed over it).
  const auto first_log = out / "runs" / "listops" / "seed-0" / "run.log";
  for (int i = 0; i < 36000 && !fs::exists(first_log); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(first_log)) << read_text(log);
  write_text(d.path() / "bin" / "lrahost.new", "#!/bin/sh\necho 'not the build the suite started with' >&2\nexit 99\n");
  fs::permissions(d.path() / "bin" / "lrahost.new", fs::perms::owner_all);
  fs::rename(d.path() / "bin" / "lrahost.new", bin);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string text = read_text(log);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 0) << text;
  const json s = json::parse(read_text(out / "suite.json"));
  ASSERT_EQ(s["runs"].size(), 2u);
  for (const auto& r : s["runs"]) EXPECT_EQ(r["status"], "ok") << r.dump();
  EXPECT_EQ(read_text(out / "runs" / "listops" / "seed-1" / "run.log").find("not the build"), std::string::npos);
}

}  // namespace
}  // namespace lra::test
