#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "lra/status.h"

namespace lra::host {
namespace {

std::atomic<unsigned> g_counter{0};

}  // namespace

void write_file_atomic(const std::filesystem::path& file, std::string_view content) {
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& what, int err) -> lra::Error {
    return lra::Error(lra::ErrorKind::internal, "cannot write '" + file.string() + "': " + what +
                                                    ": " + std::strerror(err));
  };
  if (file.filename().empty()) {
    throw lra::Error(lra::ErrorKind::internal,
                     "cannot write '" + file.string() + "': not a file name");
  }
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");

  // A unique name of our own (rather than mkstemp) so that the file is created
  // with 0666 & ~umask like any other output, not mkstemp's 0600.
  fs::path tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = dir / ("." + file.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                 std::to_string(g_counter.fetch_add(1)));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST && errno != EINTR) break;
  }
  if (fd < 0) throw fail("cannot create a temporary file in '" + dir.string() + "'", errno);

  auto abandon = [&](const std::string& what, int err) -> lra::Error {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return fail(what, err);
  };

  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw abandon("write failed", errno);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) throw abandon("fsync failed", errno);
  // Close exactly once, even on EINTR: Linux has released the descriptor.
  const int rc = ::close(fd);
  fd = -1;
  if (rc != 0) throw abandon("close failed", errno);
  if (::rename(tmp.c_str(), file.c_str()) != 0) throw abandon("rename failed", errno);

  // Make the rename itself durable. Best effort: some file systems refuse
  // fsync on a directory, and the content is already safe.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace lra::host
