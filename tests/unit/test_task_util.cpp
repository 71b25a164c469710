// The helpers shared by the built-in task readers (tasks/common/task_util.h):
// the seeded subset rule, the cache-folder hash, parallel_for and with_commas.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "task_util.h"

using namespace lra::tasks;

namespace {

TEST(TaskUtil, ChooseSubsetIsASeededPermutationInFileOrder) {
  EXPECT_EQ(choose_subset(5, 0, 1), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(choose_subset(5, 7, 1), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(choose_subset(0, 3, 1).empty());
  const auto a = choose_subset(1000, 100, 7);
  ASSERT_EQ(a.size(), 100u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), 100u);
  EXPECT_EQ(a, choose_subset(1000, 100, 7));
  EXPECT_NE(a, choose_subset(1000, 100, 8));
  // a smaller cap with the same seed is a prefix of the same permutation: fewer of the same picks
  const auto b = choose_subset(1000, 10, 7);
  for (int64_t i : b) EXPECT_TRUE(std::binary_search(a.begin(), a.end(), i)) << i;
  // both halves of a two-class split are represented in proportion (statistically)
  int64_t first_half = 0;
  for (int64_t i : choose_subset(25000, 2000, 0)) first_half += i < 12500;
  EXPECT_GT(first_half, 850);
  EXPECT_LT(first_half, 1150);
}

// Pinned values: capped datasets (and the tests of every task) depend on them
// bit for bit, on every platform. If this fails, the subset rule changed.
TEST(TaskUtil, ChooseSubsetPinnedValues) {
  EXPECT_EQ(choose_subset(20, 5, 0), (std::vector<int64_t>{1, 5, 9, 15, 17}));
  EXPECT_EQ(choose_subset(100, 8, 42), (std::vector<int64_t>{0, 21, 43, 52, 55, 60, 70, 82}));
  EXPECT_EQ(choose_subset(60, 20, 3), (std::vector<int64_t>{3, 9, 12, 16, 24, 25, 27, 28, 30, 31, 33, 36, 37, 44, 49,
                                                             50, 52, 53, 54, 59}));
  EXPECT_EQ(choose_subset(25000, 6, UINT64_MAX), (std::vector<int64_t>{10001, 13526, 16332, 21327, 21584, 23142}));
}

// The hash names generated-dataset cache folders (gen-<hash>): it must never change.
TEST(TaskUtil, Fnv1a64HexKnownValues) {
  EXPECT_EQ(fnv1a64_hex(""), "cbf29ce484222325");
  EXPECT_EQ(fnv1a64_hex("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(fnv1a64_hex("foobar"), "85944171f73967e8");
  EXPECT_EQ(fnv1a64_hex(std::string("\x00\xff", 2)).size(), 16u);
}

TEST(TaskUtil, WithCommas) {
  EXPECT_EQ(with_commas(0), "0");
  EXPECT_EQ(with_commas(999), "999");
  EXPECT_EQ(with_commas(1000), "1,000");
  EXPECT_EQ(with_commas(25000), "25,000");
  EXPECT_EQ(with_commas(200000), "200,000");
  EXPECT_EQ(with_commas(1234567), "1,234,567");
  EXPECT_EQ(with_commas(-1234), "-1,234");
}

TEST(TaskUtil, ParallelForRunsEveryIndexOnce) {
  for (int threads : {0, 1, 3, 8})
    for (int64_t chunk : {1, 5, 64})
      for (int64_t n : {0, 1, 7, 200}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        parallel_for(n, threads, [&](int64_t i) { ++hits[static_cast<size_t>(i)]; }, chunk);
        for (int64_t i = 0; i < n; ++i)
          EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "threads " << threads << " chunk " << chunk << " i " << i;
      }
}

TEST(TaskUtil, ParallelForRethrowsTheLowestFailingIndex) {
  for (int threads : {1, 2, 8})
    for (int64_t chunk : {1, 4, 64}) {
      try {
        parallel_for(300, threads, [](int64_t i) {
          if (i == 37 || i == 38 || i == 250) throw std::runtime_error(std::to_string(i));
        }, chunk);
        ADD_FAILURE() << "no exception, threads " << threads << " chunk " << chunk;
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "37") << "threads " << threads << " chunk " << chunk;
      }
    }
}

// A pid that is certainly not running: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// Issue 18: a killed generation left its staging folder forever; the next
// generation into the same place removes it.
TEST(TaskUtil, StaleStagingFoldersOfGoneProcessesAreRemoved) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("lra-staging-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const std::string fin = (root / "listops").string();
  const std::string mine = staging_folder_name(fin, 7);  // <fin>.tmp-<host>-<pid>-7
  ASSERT_EQ(mine.rfind(fin + ".tmp-", 0), 0u) << mine;
  const std::string suffix = "-" + std::to_string(::getpid()) + "-7";
  ASSERT_EQ(mine.substr(mine.size() - suffix.size()), suffix) << mine;
  const std::string host = mine.substr(fin.size() + 5, mine.size() - suffix.size() - fin.size() - 5);
  const std::string gone = std::to_string(dead_pid());
  const std::string alive = std::to_string(::getppid());
  const std::vector<std::string> stale = {fin + ".tmp-" + host + "-" + gone + "-0", fin + ".tmp-" + gone + "-3"};
  const std::vector<std::string> kept = {mine,                                         // this process: running
                                         fin + ".tmp-" + host + "-" + alive + "-0",   // a running process
                                         fin + ".tmp-elsewhere-" + gone + "-0",       // another machine's
                                         (root / "other.tmp-").string() + host + "-" + gone + "-0",  // another folder's
                                         fin + ".tmp-notes"};
  for (const auto& d : stale) fs::create_directories(fs::path(d) / "imgs");
  for (const auto& d : kept) fs::create_directories(d);
  std::vector<std::string> removed = remove_stale_staging(fin);
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> expected = stale;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(removed, expected);
  for (const auto& d : stale) EXPECT_FALSE(fs::exists(d)) << d;
  for (const auto& d : kept) EXPECT_TRUE(fs::exists(d)) << d;
  EXPECT_TRUE(remove_stale_staging(fin).empty());
  EXPECT_TRUE(remove_stale_staging((root / "absent" / "x").string()).empty());  // no parent folder: nothing to do
  fs::remove_all(root);
}

}  // namespace
