#include "common/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/text.h"
#include "lra/status.h"

namespace lra::host {

namespace fs = std::filesystem;

namespace {

std::string read_all(int fd) {
  std::string text;
  char buf[64];
  off_t at = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    at += n;
    if (text.size() > 256) break;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

[[noreturn]] void usage(const std::string& option, const fs::path& dir, const std::string& why) {
  // visible_text: a name with a newline or an escape sequence is shown, not obeyed.
  throw Error(ErrorKind::usage, option + " '" + text::visible_text(dir.string()) + "': " + why);
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

void check_output_path_name(const fs::path& path, const std::string& option) {
  const std::string& s = path.native();
  if (s.empty()) usage(option, path, "is empty; pass the path to write to");
  if (std::all_of(s.begin(), s.end(), is_blank)) usage(option, path, "is only blanks; pass the path to write to");
  for (const char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      usage(option, path, "contains a control character; choose a name without one");
  // The last named component ("runs/ x/" -> " x"): a leading or trailing
  // blank makes a folder that looks like another one, or like nothing.
  std::string last;
  for (const auto& part : path)
    if (!part.empty() && part != "." && part != "/") last = part.native();
  if (!last.empty() && (is_blank(last.front()) || is_blank(last.back())))
    usage(option, path, "the name '" + last + "' begins or ends with a blank; remove the blank (quote the path in the shell)");
}

void check_output_dir_argument(const fs::path& dir, const std::string& option) {
  check_output_path_name(dir, option);
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    usage(option, dir, "exists and is not a directory; choose a directory (it is created when missing)");
  // A parent that is a file: creating the directory would fail with ENOTDIR.
  for (fs::path p = dir.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    const auto ps = fs::status(p, ec);
    if (fs::exists(ps)) {
      if (!fs::is_directory(ps)) usage(option, dir, "'" + p.string() + "' is not a directory; choose another path");
      break;
    }
  }
}

DirLock::DirLock(const fs::path& dir, const std::string& option) : dir_(dir), file_(dir / kFileName) {
  check_output_dir_argument(dir, option);
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) usage(option, dir, "cannot create it (" + ec.message() + "); choose a directory you can write to");
    created_dir_ = true;
  }
  for (int attempt = 0;; ++attempt) {
    fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      const int err = errno;
      if (err == EACCES || err == EPERM || err == EROFS)
        usage(option, dir, std::string("is not writable (") + std::strerror(err) +
                               "); choose a directory you can write to");
      throw Error(ErrorKind::storage, "cannot create the lock file '" + file_.string() + "': " + std::strerror(err) +
                                          "; check that " + option + " is writable");
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = read_all(fd_);
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK)
        usage(option, dir, "another lrahost (PID " + (holder.empty() ? std::string("unknown") : holder) +
                               ") is writing into it (lock file " + file_.string() +
                               "); wait for it to finish or choose another directory");
      throw Error(ErrorKind::storage, "cannot lock '" + file_.string() + "': " + std::strerror(err));
    }
    // Locked. A releasing writer unlinks the file while holding its lock: if
    // what we locked is no longer the file at that path, start again.
    struct stat mine {}, there {};
    if (::fstat(fd_, &mine) == 0 && ::stat(file_.c_str(), &there) == 0 && mine.st_ino == there.st_ino &&
        mine.st_dev == there.st_dev)
      break;
    ::close(fd_);
    fd_ = -1;
    if (attempt > 100) throw Error(ErrorKind::internal, "could not lock " + file_.string() + ": it keeps changing");
  }
  const std::string previous = read_all(fd_);
  if (!previous.empty() && previous != std::to_string(::getpid())) {
    stale_note_ = "took over the stale lock " + file_.string() + " of process " + previous +
                  ", which is no longer running (it was killed or crashed)";
    std::fprintf(stderr, "lrahost: note: %s\n", stale_note_.c_str());
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::unlink(file_.c_str());
    ::close(fd_);
    fd_ = -1;
    throw Error(ErrorKind::storage, "cannot write the lock file '" + file_.string() + "': " + std::strerror(err) +
                                        "; free space on that file system or choose another " + option);
  }
}

DirLock::~DirLock() {
  if (fd_ < 0) return;
  ::unlink(file_.c_str());  // while still holding it (see the constructor's check)
  ::close(fd_);
  if (created_dir_) {
    std::error_code ec;
    if (fs::is_empty(dir_, ec) && !ec) fs::remove(dir_, ec);  // a command refused before writing anything
  }
}

}  // namespace lra::host
