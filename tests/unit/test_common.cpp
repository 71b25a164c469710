// lra_host_common: SHA-256, atomic file writes, build facts.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "common/build_info.h"
#include "common/sha256.h"
#include "lra/status.h"

namespace fs = std::filesystem;
using namespace lra::host;

namespace {

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("lra-test-common-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void spit(const fs::path& p, const std::string& s) {
    std::ofstream(p, std::ios::binary) << s;
  }

  fs::path dir_;
};

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// --- SHA-256 -------------------------------------------------------------------

TEST(Sha256, KnownVectors) {
  // FIPS 180-2 examples.
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, IncrementalEqualsOneShotAndDigestDoesNotEndIt) {
  Sha256 h;
  h.update("a");
  EXPECT_EQ(h.hex_digest(), sha256_hex("a"));  // an intermediate digest...
  const char bc[] = {'b', 'c'};
  h.update(bc, sizeof bc);
  EXPECT_EQ(h.hex_digest(), sha256_hex("abc"));  // ...does not stop the hashing
  EXPECT_EQ(h.hex_digest(), sha256_hex("abc"));
}

TEST(Sha256, MovedHasherKeepsState) {
  Sha256 a;
  a.update("ab");
  Sha256 b = std::move(a);
  b.update("c");
  EXPECT_EQ(b.hex_digest(), sha256_hex("abc"));
}

TEST_F(TempDir, Sha256FileMatchesContent) {
  const fs::path small = dir_ / "small.bin";
  spit(small, "abc");
  EXPECT_EQ(sha256_file(small), sha256_hex("abc"));

  // Larger than the 1 MiB read buffer, not a multiple of it, with NUL bytes.
  std::string big(3 * (1 << 20) + 12345, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 251);
  const fs::path large = dir_ / "large.bin";
  spit(large, big);
  EXPECT_EQ(sha256_file(large), sha256_hex(big));

  const fs::path empty = dir_ / "empty.bin";
  spit(empty, "");
  EXPECT_EQ(sha256_file(empty), sha256_hex(""));
}

TEST_F(TempDir, Sha256FileUnreadableIsUsageErrorNamingThePath) {
  const fs::path missing = dir_ / "no-such-file.so";
  try {
    sha256_file(missing);
    FAIL() << "expected lra::Error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
  try {
    sha256_file(dir_);  // a directory opens but cannot be read
    FAIL() << "expected lra::Error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find(dir_.string()), std::string::npos) << e.what();
  }
}

// --- atomic writes ----------------------------------------------------------------

TEST_F(TempDir, AtomicWriteCreatesAndReplacesLeavingNoTemporaryFile) {
  const fs::path f = dir_ / "result.json";
  write_file_atomic(f, "first");
  EXPECT_EQ(slurp(f), "first");
  write_file_atomic(f, "second, longer content");
  EXPECT_EQ(slurp(f), "second, longer content");
  write_file_atomic(f, "");
  EXPECT_EQ(slurp(f), "");
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{"result.json"});
}

TEST_F(TempDir, AtomicWriteUsesTheUsualFileMode) {
  const mode_t old = ::umask(022);
  const fs::path f = dir_ / "out.txt";
  write_file_atomic(f, "x");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(TempDir, AtomicWriteFailureThrowsStorageNamingThePathAndLeavesNothing) {
  const fs::path f = dir_ / "missing-subdir" / "result.json";
  try {
    write_file_atomic(f, "x");
    FAIL() << "expected lra::Error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::storage);  // exit 8 (issue 18)
    EXPECT_NE(std::string(e.what()).find(f.string()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(names_in(dir_).empty());

  // Renaming onto a directory fails after the temporary file was written:
  // the temporary must be removed and the directory left alone.
  const fs::path target = dir_ / "a-dir";
  fs::create_directories(target / "inside");
  EXPECT_THROW(write_file_atomic(target, "x"), lra::Error);
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{"a-dir"});
  EXPECT_TRUE(fs::is_directory(target / "inside"));
}

// --- build facts ------------------------------------------------------------------

TEST(BuildInfo, RecordsVersionRevisionAndCompiler) {
  const BuildInfo& b = build_info();
  EXPECT_TRUE(std::regex_match(b.version, std::regex(R"(\d+\.\d+\.\d+.*)"))) << b.version;
  EXPECT_TRUE(b.git_revision == "unknown" ||
              std::regex_match(b.git_revision, std::regex("[0-9a-f]{40}([0-9a-f]{24})?")))
      << b.git_revision;
  if (b.git_revision == "unknown") {
    EXPECT_FALSE(b.git_dirty);
  }
  EXPECT_FALSE(b.build_type.empty());
  EXPECT_FALSE(b.compiler.empty());
  EXPECT_NE(b.compiler, "unknown");
  EXPECT_EQ(&build_info(), &b);
}
