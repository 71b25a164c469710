// common/untrusted_file: what a sandboxed plugin leaves in its scratch folder
// is read only when it is a plain, small, regular file (issue 31).
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>

#include <gtest/gtest.h>

#include "common/untrusted_file.h"
#include "lra/status.h"

namespace lra::host {
namespace {
namespace fs = std::filesystem;

struct Dir {
  fs::path path;
  Dir() {
    std::string t = "/tmp/lra-untrusted-test-XXXXXX";
    path = mkdtemp(t.data());
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// The error read_untrusted_file throws, or "" when it read the file.
std::string refusal(const fs::path& file, uint64_t max_bytes) {
  try {
    read_untrusted_file(file, max_bytes);
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    return e.what();
  }
}

TEST(UntrustedFile, ARegularFileIsReadWhole) {
  Dir scratch;
  write(scratch.path / "predictions.json", "{\"sets\": []}");
  EXPECT_EQ(read_untrusted_file(scratch.path / "predictions.json", 1000), "{\"sets\": []}");
  write(scratch.path / "exact", std::string(1000, 'x'));
  EXPECT_EQ(read_untrusted_file(scratch.path / "exact", 1000).size(), 1000u);
}

TEST(UntrustedFile, ASymlinkToASecretIsNotFollowed) {
  Dir scratch, secrets;
  write(secrets.path / "key.pem", "PRIVATE-KEY-MATERIAL");
  fs::create_symlink(secrets.path / "key.pem", scratch.path / "predictions.json");
  const std::string why = refusal(scratch.path / "predictions.json", 1 << 20);
  EXPECT_NE(why.find("predictions.json"), std::string::npos) << why;
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
  EXPECT_EQ(why.find("PRIVATE-KEY-MATERIAL"), std::string::npos) << why;
  // The same secret as a plain file is read: the refusal is about the link.
  write(scratch.path / "plain", "PRIVATE-KEY-MATERIAL");
  EXPECT_EQ(refusal(scratch.path / "plain", 1 << 20), "");
}

TEST(UntrustedFile, AFolderSwappedForASymlinkIsNotFollowed) {
  Dir scratch, secrets;
  write(secrets.path / "predictions.json", "secret");
  fs::create_symlink(secrets.path, scratch.path / "out");
  const std::string why = refusal(scratch.path / "out" / "predictions.json", 1 << 20);
  EXPECT_NE(why.find("cannot open its folder"), std::string::npos) << why;
}

TEST(UntrustedFile, AFifoIsRefusedAtOnceInsteadOfBlocking) {
  Dir scratch;
  ASSERT_EQ(mkfifo((scratch.path / "predictions.json").c_str(), 0644), 0);
  auto pending = std::async(std::launch::async, [&] { return refusal(scratch.path / "predictions.json", 1 << 20); });
  ASSERT_EQ(pending.wait_for(std::chrono::seconds(5)), std::future_status::ready) << "reading a FIFO blocked";
  const std::string why = pending.get();
  EXPECT_NE(why.find("a FIFO"), std::string::npos) << why;
}

TEST(UntrustedFile, DevZeroThroughASymlinkIsRefused) {
  Dir scratch;
  fs::create_symlink("/dev/zero", scratch.path / "predictions.json");
  EXPECT_NE(refusal(scratch.path / "predictions.json", 1 << 20).find("symbolic link"), std::string::npos);
}

TEST(UntrustedFile, ASocketIsRefused) {
  Dir scratch;
  const int s = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = (scratch.path / "predictions.json").string();
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string why = refusal(path, 1 << 20);
  close(s);
  EXPECT_NE(why.find("a socket"), std::string::npos) << why;
}

TEST(UntrustedFile, AFileOverTheCapIsAnErrorNotATruncation) {
  Dir scratch;
  write(scratch.path / "predictions.json", std::string(1001, 'x'));
  const std::string why = refusal(scratch.path / "predictions.json", 1000);
  EXPECT_NE(why.find("1001 bytes"), std::string::npos) << why;
  EXPECT_NE(why.find("1000"), std::string::npos) << why;
}

TEST(UntrustedFile, AMissingFileIsNamed) {
  Dir scratch;
  const std::string why = refusal(scratch.path / "predictions.json", 1000);
  EXPECT_NE(why.find((scratch.path / "predictions.json").string()), std::string::npos) << why;
  EXPECT_NE(why.find("missing"), std::string::npos) << why;
}

}  // namespace
}  // namespace lra::host
