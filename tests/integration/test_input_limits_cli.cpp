// Issue 18, hostile inputs: JSON nested too deep, sizes in headers beyond what
// can be allocated, paths in data files that leave the dataset, truncated rows,
// staging folders of interrupted generations, ranks that never arrive.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "cli_harness.h"

namespace fs = std::filesystem;
using lra::test::lrahost;
using lra::test::TempDir;
using lra::test::write_text;

namespace {

std::string deep_json(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A result file nested 100,000 deep (200 KB) made `verify` and `leaderboard`
// overflow the stack (SIGSEGV) in the digest's recursive dump.
TEST(InputLimitsCli, VerifyRefusesDeeplyNestedResult) {
  TempDir dir;
  const fs::path file = dir.path() / "result.json";
  write_text(file, "{\"schema\": " + deep_json(100000) + "}");
  const auto o = lrahost("verify " + file.string());
  EXPECT_NE(o.code, 128 + 11) << o.output;
  EXPECT_EQ(o.code, 5) << o.output;  // verify: an unreadable file
  EXPECT_NE(o.output.find("nested more than 64 levels deep"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find(file.string()), std::string::npos) << o.output;
}

TEST(InputLimitsCli, LeaderboardRefusesDeeplyNestedResult) {
  TempDir dir;
  const fs::path file = dir.path() / "result.json";
  write_text(file, deep_json(100000));
  const auto o = lrahost("leaderboard " + file.string() + " --out " + (dir.path() / "site").string());
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("nested more than 64 levels deep"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(dir.path() / "site" / "index.html"));
}

TEST(InputLimitsCli, ForgetCompareRefusesDeeplyNestedCurve) {
  TempDir dir;
  const fs::path file = dir.path() / "deep.json";
  write_text(file, deep_json(100000));
  const auto o = lrahost("forget --compare " + file.string() + " " + file.string() + " --out " +
                         (dir.path() / "cmp").string());
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("nested more than 64 levels deep"), std::string::npos) << o.output;
}

TEST(InputLimitsCli, BenchReportRefusesDeeplyNestedFile) {
  TempDir dir;
  const fs::path file = dir.path() / "bench.json";
  write_text(file, deep_json(100000));
  const auto o = lrahost("bench --report " + file.string() + " --out " + (dir.path() / "b").string());
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("nested more than 64 levels deep"), std::string::npos) << o.output;
}

// ---------------------------------------------------------------------------
// Sizes from manifests and headers

const std::string kSmoke = "run --plugin transformer --task listops --preset smoke --threads 1";

TEST(InputLimitsCli, HugeMaxLenIsARulesErrorNotBadAlloc) {
  TempDir dir;
  const auto o = lrahost(kSmoke + " --set model.max_len=2000000000 --out " + (dir.path() / "r").string());
  EXPECT_EQ(o.code, 4) << o.output;
  EXPECT_NE(o.output.find("model.max_len = 2000000000: expected at most 1048576"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("bad_alloc"), std::string::npos) << o.output;
}

// A size within the manifest's bounds that still cannot be allocated: LibTorch's
// CPU allocator fails (a c10::Error, "can't allocate memory") and the host ends
// with exit 7 and LibTorch's size instead of "internal error". The address
// space is limited to 4 GB so that the 16 GB position table fails on any machine.
TEST(InputLimitsCli, LibTorchAllocationFailureIsExitSeven) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: it cannot start under ulimit -v";
#endif
  TempDir dir;
  const auto o = lrahost(kSmoke + " --set model.max_len=1048576 --set model.d_model=2048 --set model.qkv_dim=2048 --out " +
                             (dir.path() / "r").string(),
                         "ulimit -v 4000000;");
  EXPECT_EQ(o.code, 7) << o.output;
  EXPECT_NE(o.output.find("lrahost: error: out of memory in LibTorch"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("you tried to allocate 17179885568 bytes"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("internal error"), std::string::npos) << o.output;
}

// Six CIFAR-10 batch files of `records` all-zero records each.
void write_cifar(const fs::path& dir, int records) {
  fs::create_directories(dir);
  for (const char* name : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                           "data_batch_5.bin", "test_batch.bin"}) {
    std::ofstream out(dir / name, std::ios::binary);
    const std::string rec(3073, '\0');
    for (int i = 0; i < records; ++i) out << rec;
  }
}

TEST(InputLimitsCli, NineGigabyteCifarBatchIsRefusedOnItsSize) {
  TempDir dir;
  const fs::path bins = dir.path() / "cifar-10-batches-bin";
  write_cifar(bins, 10);
  fs::resize_file(bins / "data_batch_2.bin", 3000000ull * 3073ull);  // 9.2 GB, sparse
  const auto o = lrahost("data check --task image --data-dir " + dir.str());
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find((bins / "data_batch_2.bin").string() + " has 9219000000 bytes, more than a CIFAR-10 batch"),
            std::string::npos)
      << o.output;
}

// ---------------------------------------------------------------------------
// Paths and rows in data files

TEST(InputLimitsCli, PathfinderMetadataCannotNameFilesOutsideTheDataset) {
  TempDir dir;
  const auto gen = lrahost("data generate pathfinder --out " + dir.str() + " --n 200 --threads 1");
  ASSERT_EQ(gen.code, 0) << gen.output;
  const fs::path ds = dir.path() / "pathfinder32" / "curv_contour_length_14";
  for (const std::string row : {"../../../../../../etc passwd 0 1", "/etc passwd 0 1", "imgs/0 /etc/hostname 0 1"}) {
    std::ofstream(ds / "metadata" / "99.npy", std::ios::binary) << row << "\n";
    const auto o = lrahost("data check --task pathfinder --data-dir " + dir.str());
    EXPECT_EQ(o.code, 5) << row << "\n" << o.output;
    EXPECT_NE(o.output.find((ds / "metadata" / "99.npy").string() + ":1"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("outside the dataset folder"), std::string::npos) << o.output;
  }
}

TEST(InputLimitsCli, AanRowCutInsideItsLastColumnIsRefused) {
  TempDir dir;
  const std::string row = "1\tA01-0001\tB02-0002\tfirst text\tsecond text\n";
  for (const char* split : {"train", "eval", "test"})
    write_text(dir.path() / ("new_aan_pairs." + std::string(split) + ".tsv"), row + row);
  // The test split cut in the middle of its second row's text2.
  write_text(dir.path() / "new_aan_pairs.test.tsv", row + "0\tA01-0001\tB02-0002\tfirst text\tsecond te");
  const auto o = lrahost("data check --task retrieval --data-dir " + dir.str());
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find((dir.path() / "new_aan_pairs.test.tsv").string() + ":2:"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("no line end"), std::string::npos) << o.output;
}

// ---------------------------------------------------------------------------
// Staging folders of interrupted generations

TEST(InputLimitsCli, KilledGenerationsStagingFolderIsRemovedByTheNextOne) {
  TempDir dir;
  const fs::path out = dir.path() / "pf";
  const fs::path final_dir = out / "pathfinder32" / "curv_contour_length_14";
  const pid_t pid = lra::test::spawn_lrahost("data generate pathfinder --out " + out.string() + " --n 400000 --threads 1",
                                             dir.path() / "killed.log");
  ASSERT_GT(pid, 0);
  // Wait for its staging folder, then kill it as a user's Ctrl-C or OOM killer would.
  auto staging = [&] {
    std::vector<fs::path> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(final_dir.parent_path(), ec))
      if (e.path().filename().string().rfind("curv_contour_length_14.tmp-", 0) == 0) found.push_back(e.path());
    return found;
  };
  const auto start = std::chrono::steady_clock::now();
  while (staging().empty() && std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  const auto left = staging();
  ASSERT_EQ(left.size(), 1u) << lra::test::read_text(dir.path() / "killed.log");
  ASSERT_FALSE(fs::exists(final_dir));

  const auto o = lrahost("data generate pathfinder --out " + out.string() + " --n 200 --threads 1");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("removed " + left[0].string() + ", the staging folder of an interrupted generation"),
            std::string::npos)
      << o.output;
  EXPECT_TRUE(staging().empty());
  EXPECT_TRUE(fs::is_directory(final_dir / "metadata"));
}

TEST(InputLimitsCli, ListOpsGenerationRemovesAStaleStagingFolder) {
  TempDir dir;
  const fs::path out = dir.path() / "listops";
  // A staging folder of a generation whose process is gone (the old name form, without the host).
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const fs::path stale = dir.path() / ("listops.tmp-" + std::to_string(gone) + "-0");
  write_text(stale / "basic_train.tsv", "partial");
  const auto o = lrahost("data generate listops --out " + out.string() + " --n 200 --threads 1");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("removed " + stale.string()), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(out / "basic_train.tsv"));
}

// ---------------------------------------------------------------------------
// Bounded waits in distributed start-up

const std::string kDistRun =
    "run --plugin transformer --task listops --preset smoke --set train.steps=4 --set train.eval_every=2 --threads 1";

std::string free_port(int salt) { return std::to_string(20000 + (getpid() * 7 + salt * 101) % 20000); }

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(InputLimitsCli, LoneRankZeroGivesUpNamingTheMissingRank) {
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  const auto o = lrahost(kDistRun + " --out " + (dir.path() / "r").string(),
                         "WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + free_port(1) + " LRA_DIST_TIMEOUT=2");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("rank 0 of 2: rank 1 never arrived at the rendezvous 127.0.0.1:"), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("within 2 s (LRA_DIST_TIMEOUT)"), std::string::npos) << o.output;
  EXPECT_LT(seconds_since(t0), 120.0);  // it used to wait forever
}

TEST(InputLimitsCli, LoneRankOneGivesUpNamingRankZero) {
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  const auto o = lrahost(kDistRun + " --out " + (dir.path() / "r").string(),
                         "WORLD_SIZE=2 RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + free_port(2) + " LRA_DIST_TIMEOUT=2");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("rank 0 never arrived"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("within 2 s, LRA_DIST_TIMEOUT"), std::string::npos) << o.output;
  EXPECT_LT(seconds_since(t0), 120.0);  // it used to take 300 s
}

TEST(InputLimitsCli, TwoOfThreeRanksNameTheThirdThatNeverArrived) {
  TempDir dir;
  const std::string env =
      "WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + free_port(3) + " LRA_DIST_TIMEOUT=15";
  // train.batch_size 30: divisible by a world size of 3.
  const std::string run = kDistRun + " --set train.batch_size=30 --out " + (dir.path() / "r").string();
  const pid_t rank1 = lra::test::spawn_lrahost(run, dir.path() / "rank1.log", env + " RANK=1");
  ASSERT_GT(rank1, 0);
  const auto o = lrahost(run, env + " RANK=0");
  int status = 0;
  waitpid(rank1, &status, 0);
  const std::string log1 = lra::test::read_text(dir.path() / "rank1.log");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << log1;
  EXPECT_NE(o.output.find("rank 0 of 3: rank 2 never arrived"), std::string::npos) << o.output;
  // Rank 1 gives up at its own deadline, or when rank 0 (which serves the store) has given up first.
  EXPECT_NE(log1.find("rank 1 of 3: rank 2 never arrived at the rendezvous 127.0.0.1:"), std::string::npos) << log1;
}

}  // namespace
