// Issue 18: checked atomic writes (ErrorKind::storage on a full disk or a
// file-size limit, the previous file kept), all-or-nothing multi-file outputs,
// and the output-directory lock (a second writer refused, a stale lock taken over).
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/dir_lock.h"
#include "lra/status.h"

namespace fs = std::filesystem;
using namespace lra::host;

namespace {

class OutputSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("lra-test-output-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  static std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void spit(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(dir_)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }
  fs::path dir_;
};

// RLIMIT_FSIZE below the content: write() fails with EFBIG (SIGXFSZ ignored,
// as lrahost's main does), the way a full disk fails it.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &old_);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  sighandler_t old_handler_;
};

TEST_F(OutputSafety, AFailedWriteIsStorageNamingFileAndReasonAndKeepsThePreviousFile) {
  const fs::path f = dir_ / "model.pt";
  spit(f, "previous good content");
  try {
    FileSizeLimit limit(4096);
    write_file_atomic(f, std::string(100000, 'x'));
    FAIL() << "expected lra::Error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::storage);
    const std::string m = e.what();
    EXPECT_NE(m.find(f.string()), std::string::npos) << m;
    EXPECT_NE(m.find("File too large"), std::string::npos) << m;
    EXPECT_NE(m.find("limit"), std::string::npos) << m;  // what to do
  }
  EXPECT_EQ(slurp(f), "previous good content");
  EXPECT_EQ(names(), std::vector<std::string>{"model.pt"});  // no temporary left behind
}

TEST_F(OutputSafety, AReadOnlyDirectoryIsStorage) {
  const fs::path ro = dir_ / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  spit(ro / "probe", "x");
  if (fs::exists(ro / "probe")) GTEST_SKIP() << "running as root: permissions do not stop writes here";
  try {
    write_file_atomic(ro / "result.json", "{}");
    FAIL() << "expected lra::Error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::storage);
    EXPECT_NE(std::string(e.what()).find("Permission denied"), std::string::npos) << e.what();
  }
}

TEST_F(OutputSafety, MultiFileOutputIsAllOrNothingWhenAFileIsADirectory) {
  spit(dir_ / "leaderboard.json", "old json");
  spit(dir_ / "leaderboard.md", "old md");
  fs::create_directories(dir_ / "index.html" / "inside");
  try {
    write_files_atomic(dir_, {{"leaderboard.json", "new json"}, {"leaderboard.md", "new md"}, {"index.html", "new"}});
    FAIL() << "expected lra::Error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::storage);
    EXPECT_NE(std::string(e.what()).find("index.html"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(dir_ / "leaderboard.json"), "old json");
  EXPECT_EQ(slurp(dir_ / "leaderboard.md"), "old md");
  EXPECT_TRUE(fs::is_directory(dir_ / "index.html" / "inside"));
  EXPECT_EQ(names(), (std::vector<std::string>{"index.html", "leaderboard.json", "leaderboard.md"}));
}

TEST_F(OutputSafety, MultiFileOutputIsAllOrNothingWhenTheThirdWriteFails) {
  spit(dir_ / "bench.json", "old json");
  spit(dir_ / "bench.md", "old md");
  spit(dir_ / "bench.svg", "old svg");
  try {
    FileSizeLimit limit(4096);
    write_files_atomic(dir_, {{"bench.json", "new json"}, {"bench.md", "new md"}, {"bench.svg", std::string(100000, 's')}});
    FAIL() << "expected lra::Error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::storage);
    EXPECT_NE(std::string(e.what()).find("bench.svg"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("none of the output's files were replaced"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(dir_ / "bench.json"), "old json");
  EXPECT_EQ(slurp(dir_ / "bench.md"), "old md");
  EXPECT_EQ(slurp(dir_ / "bench.svg"), "old svg");
  EXPECT_EQ(names(), (std::vector<std::string>{"bench.json", "bench.md", "bench.svg"}));  // staging removed

  write_files_atomic(dir_, {{"bench.json", "new json"}, {"bench.md", "new md"}, {"bench.svg", "new svg"}});
  EXPECT_EQ(slurp(dir_ / "bench.json"), "new json");
  EXPECT_EQ(slurp(dir_ / "bench.svg"), "new svg");
  EXPECT_EQ(names(), (std::vector<std::string>{"bench.json", "bench.md", "bench.svg"}));
}

TEST_F(OutputSafety, StagingFoldersOfDeadWritersAreRemoved) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // a PID no process has now
  const fs::path stale = dir_ / (".lrahost-staging-" + std::to_string(child));
  fs::create_directories(stale);
  spit(stale / "half.json", "{");
  write_files_atomic(dir_, {{"a.txt", "a"}});
  EXPECT_EQ(names(), std::vector<std::string>{"a.txt"});
}

TEST_F(OutputSafety, ASecondWriterIsRefusedNamingTheHoldersPidAndTheLockFile) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t holder = fork();
  if (holder == 0) {
    try {
      DirLock lock(dir_ / "out");
      (void)!write(ready[1], "x", 1);
      pause();
    } catch (...) {
    }
    _exit(1);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  try {
    DirLock second(dir_ / "out");
    ADD_FAILURE() << "expected lra::Error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    const std::string m = e.what();
    EXPECT_NE(m.find("PID " + std::to_string(holder)), std::string::npos) << m;
    EXPECT_NE(m.find((dir_ / "out" / ".lrahost.lock").string()), std::string::npos) << m;
  }
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  // Killed: the kernel dropped its lock; the file with its PID is stale and taken over.
  ASSERT_TRUE(fs::exists(dir_ / "out" / ".lrahost.lock"));
  {
    DirLock third(dir_ / "out");
    EXPECT_NE(third.stale_note().find("stale lock"), std::string::npos);
    EXPECT_NE(third.stale_note().find(std::to_string(holder)), std::string::npos) << third.stale_note();
    EXPECT_EQ(slurp(dir_ / "out" / ".lrahost.lock"), std::to_string(getpid()) + "\n");
  }
  EXPECT_FALSE(fs::exists(dir_ / "out" / ".lrahost.lock"));  // released cleanly: no file left
  close(ready[0]);
  close(ready[1]);
}

TEST_F(OutputSafety, ADirectoryCreatedForARefusedCommandIsRemovedAgain) {
  { DirLock lock(dir_ / "a" / "b"); }
  EXPECT_FALSE(fs::exists(dir_ / "a" / "b"));
  fs::create_directories(dir_ / "kept");
  { DirLock lock(dir_ / "kept"); }
  EXPECT_TRUE(fs::is_directory(dir_ / "kept"));  // it existed before: left alone
}

TEST_F(OutputSafety, BadOutputDirectoriesAreUsageErrors) {
  spit(dir_ / "file", "x");
  auto kind_of = [](const fs::path& p) {
    try {
      DirLock lock(p);
    } catch (const lra::Error& e) {
      return std::make_pair(e.kind(), std::string(e.what()));
    }
    return std::make_pair(lra::ErrorKind::none, std::string());
  };
  auto [k1, m1] = kind_of(dir_ / "file");
  EXPECT_EQ(k1, lra::ErrorKind::usage);
  EXPECT_NE(m1.find("not a directory"), std::string::npos) << m1;
  auto [k2, m2] = kind_of(dir_ / "file" / "sub");
  EXPECT_EQ(k2, lra::ErrorKind::usage) << m2;
  auto [k3, m3] = kind_of(fs::path());
  EXPECT_EQ(k3, lra::ErrorKind::usage);
  EXPECT_NE(m3.find("empty"), std::string::npos) << m3;
  const fs::path ro = dir_ / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  if (::access(ro.c_str(), W_OK) != 0) {  // not root
    auto [k4, m4] = kind_of(ro);
    EXPECT_EQ(k4, lra::ErrorKind::usage);
    EXPECT_NE(m4.find("not writable"), std::string::npos) << m4;
  }
}

}  // namespace
