#include "isolation/held_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "lra/status.h"

namespace lra::host {
namespace fs = std::filesystem;

HeldFolder::HeldFolder(const fs::path& parent, const std::string& prefix, fs::perms mode) {
  std::string tmpl = (parent / (prefix + "XXXXXX")).string();
  if (!mkdtemp(tmpl.data()))
    throw Error(ErrorKind::storage, "cannot create a working folder " + tmpl + ": " + std::strerror(errno));
  path_ = tmpl;
  std::error_code ec;
  fs::permissions(path_, mode, ec);
  lock_fd_ = ::open((path_ / kLockName).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd_ < 0 || flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const std::string why = std::strerror(errno);
    fs::remove_all(path_, ec);
    throw Error(ErrorKind::storage, "cannot hold the working folder " + path_.string() + ": " + why);
  }
}

HeldFolder::~HeldFolder() {
  std::error_code ec;
  if (!released_) fs::remove_all(path_, ec);
  else fs::remove(path_ / kLockName, ec);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

int HeldFolder::sweep_abandoned(const fs::path& parent, const std::string& prefix) {
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path dir = it->path();
    const std::string name = dir.filename().string();
    struct stat st {};
    if (name.rfind(prefix, 0) != 0 || lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
      continue;
    const int fd = ::open((dir / kLockName).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      // No lock file: made by a process killed between mkdtemp and open, or a
      // moment ago by a live one; only an old one is abandoned.
      const auto age = std::chrono::system_clock::now().time_since_epoch() - std::chrono::seconds(st.st_mtime);
      if (age > std::chrono::minutes(10)) {
        std::error_code rm;
        fs::remove_all(dir, rm);
        removed += !rm;
      }
      continue;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {  // its holder is gone
      std::error_code rm;
      fs::remove_all(dir, rm);
      removed += !rm;
    }
    ::close(fd);
  }
  return removed;
}

}  // namespace lra::host
