#include "common/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "lra/status.h"

namespace lra::host {
namespace {

std::atomic<unsigned> g_counter{0};

std::string advice(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return "free space on that file system (or raise the quota) and run the command again";
    case EFBIG:
      return "the file is larger than this process may write (a file-size limit, `ulimit -f`, or the file "
             "system's maximum); raise the limit or write elsewhere";
    case EROFS:
      return "the file system is mounted read-only; choose an output directory on a writable one";
    case EACCES:
    case EPERM:
      return "you may not write there; make the directory writable or choose another output directory";
    case EISDIR:
      return "a directory is in the way of the file; move it aside or choose another output directory";
    case ENOENT:
    case ENOTDIR:
      return "the directory does not exist (was it removed while the command ran?)";
    default:
      return "check that the output directory is writable and has free space, then run the command again";
  }
}

[[noreturn]] void throw_storage(const std::filesystem::path& path, const std::string& what, int err) {
  throw lra::Error(lra::ErrorKind::storage, storage_failure(path, what, err));
}

void fsync_dir(const std::filesystem::path& dir) {
  // Make renames durable. Best effort: some file systems refuse fsync on a
  // directory, and the content is already safe.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace

std::string storage_failure(const std::filesystem::path& path, const std::string& what, int err) {
  return "cannot write '" + path.string() + "': " + what + ": " + std::strerror(err) + "; " + advice(err);
}

void write_file_atomic(const std::filesystem::path& file, std::string_view content) {
  namespace fs = std::filesystem;
  if (file.filename().empty()) throw_storage(file, "not a file name", EISDIR);
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
  if (fd < 0) throw_storage(file, "cannot create a temporary file in '" + dir.string() + "'", errno);

  auto abandon = [&](const std::string& what, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw_storage(file, what, err);
  };

  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    // A file-size limit (RLIMIT_FSIZE) would end the process with SIGXFSZ;
    // main() ignores it so that write() fails with EFBIG and is reported here.
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write failed", errno);
    }
    if (n == 0) abandon("write made no progress", ENOSPC);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("fsync failed", errno);
  // Close exactly once, even on EINTR: Linux has released the descriptor.
  const int rc = ::close(fd);
  fd = -1;
  if (rc != 0) abandon("close failed", errno);
  if (::rename(tmp.c_str(), file.c_str()) != 0) abandon("rename failed", errno);
  fsync_dir(dir);
}

void write_files_atomic(const std::filesystem::path& dir,
                        const std::vector<std::pair<std::string, std::string>>& files) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Leftovers of killed writers: ".lrahost-staging-PID" whose process is gone.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string prefix = ".lrahost-staging-";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    char* end = nullptr;
    const long pid = std::strtol(pid_text.c_str(), &end, 10);
    if (end == pid_text.c_str() || *end != '\0' || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
  }
  // Refused before anything is written: a directory where a file goes.
  for (const auto& [name, content] : files)
    if (fs::is_directory(fs::symlink_status(dir / name, ec)))
      throw_storage(dir / name, "a directory of that name is in the way; nothing was written", EISDIR);

  const fs::path staging = dir / (".lrahost-staging-" + std::to_string(::getpid()));
  fs::remove_all(staging, ec);
  if (!fs::create_directory(staging, ec) || ec)
    throw_storage(staging, "cannot create the staging folder (nothing was written)", ec ? ec.value() : EEXIST);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } cleanup{staging};
  for (const auto& [name, content] : files) {
    try {
      write_file_atomic(staging / name, content);
    } catch (const lra::Error& e) {
      throw lra::Error(lra::ErrorKind::storage,
                       std::string(e.what()) + " (while staging '" + (dir / name).string() +
                           "'; none of the output's files were replaced)");
    }
  }
  // Swap: keep a hard link to each file being replaced, so that a rename
  // failing half-way can put the earlier ones back.
  std::vector<std::pair<fs::path, fs::path>> replaced;  // target, backup (empty: did not exist)
  for (const auto& [name, content] : files) {
    const fs::path target = dir / name, backup = staging / (".old-" + name);
    fs::path kept;
    if (::link(target.c_str(), backup.c_str()) == 0) kept = backup;
    if (::rename((staging / name).c_str(), target.c_str()) != 0) {
      const int err = errno;
      for (auto it = replaced.rbegin(); it != replaced.rend(); ++it) {
        if (it->second.empty())
          ::unlink(it->first.c_str());
        else
          (void)::rename(it->second.c_str(), it->first.c_str());
      }
      throw_storage(target, "rename from the staging folder failed (the output was left as it was)", err);
    }
    replaced.emplace_back(target, kept);
  }
  fsync_dir(dir);
}

}  // namespace lra::host
