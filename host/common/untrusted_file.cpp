#include "common/untrusted_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lra/status.h"

namespace lra::host {
namespace {

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

const char* kind_of(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISDIR(m)) return "a folder";
  return "not a regular file";
}

}  // namespace

std::string read_untrusted_file(const std::filesystem::path& file, uint64_t max_bytes) {
  auto refuse = [&](const std::string& why) {
    return Error(ErrorKind::data, file.string() + ": " + why + " (written by untrusted code, not read)");
  };
  const std::string name = file.filename().string();
  if (name.empty() || name == "." || name == "..") throw refuse("not a file name");
  const std::filesystem::path parent = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  const Fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.fd < 0) throw refuse(std::string("cannot open its folder: ") + std::strerror(errno));
  // O_PATH opens nothing for reading: a FIFO cannot block and a device is never
  // touched before fstat has shown what the name is.
  const Fd path(::openat(dir.fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (path.fd < 0) throw refuse(errno == ENOENT ? "missing" : std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(path.fd, &st) != 0) throw refuse(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw refuse(std::string("is ") + kind_of(st.st_mode) + ", not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    throw refuse("is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                 " allowed");
  // Reopen the very inode the O_PATH descriptor names (not the name again,
  // which could have been swapped in between).
  const std::string self = "/proc/self/fd/" + std::to_string(path.fd);
  const Fd in(::open(self.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (in.fd < 0) throw refuse(std::string("cannot open for reading: ") + std::strerror(errno));
  struct stat again {};
  if (::fstat(in.fd, &again) != 0 || again.st_dev != st.st_dev || again.st_ino != st.st_ino || !S_ISREG(again.st_mode))
    throw refuse("changed while it was being opened");
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw refuse(std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) break;
    // It may still be growing (the writer can be alive): the cap holds while reading too.
    if (out.size() + static_cast<uint64_t>(n) > max_bytes)
      throw refuse("grew past the " + std::to_string(max_bytes) + " bytes allowed while being read");
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace lra::host
