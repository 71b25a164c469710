// One writer per output directory. Every command that writes a directory
// (run, suite, sweep, leaderboard, forget, bench) holds DIR/.lrahost.lock
// while it works: an flock(2) on that file, which holds the writer's PID.
// A second writer is refused with exit 2 naming the holder's PID and the lock
// file. The kernel drops an flock when its process dies, so a lock file whose
// lock can be taken is stale (a killed process): it is taken over and the
// host says so. The descriptor is close-on-exec: child processes (`suite` and
// `sweep` start `lrahost run`s) do not inherit the parent's lock; each child
// locks its own run directory.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace lra::host {

class DirLock {
 public:
  // Validates `dir` as an output directory named by `option` ("--out"):
  // empty, an existing non-directory, a path through a file, or a directory
  // that cannot be written is Error(usage) with the reason. Creates the
  // directory (and its parents) when missing, then takes the lock; held by a
  // live process, Error(usage) naming its PID and the lock file. A stale lock
  // is taken over with a line on stderr (also in stale_note()).
  DirLock(const std::filesystem::path& dir, const std::string& option = "--out");
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  const std::filesystem::path& file() const { return file_; }
  // "took over the stale lock ... of process N, which is no longer running", or "".
  const std::string& stale_note() const { return stale_note_; }

  static constexpr const char* kFileName = ".lrahost.lock";

 private:
  std::filesystem::path dir_, file_;
  std::string stale_note_;
  int fd_ = -1;
  bool created_dir_ = false;  // removed again on release when nothing else was written into it
};

// An output path (--out and the like) whose name cannot be told from another
// or from nothing: empty or only blanks, a control character anywhere, or a
// last component that begins or ends with a blank (`--out " "` made a folder
// named by a space). Throws Error(usage) quoting the value.
void check_output_path_name(const std::filesystem::path& path, const std::string& option = "--out");

// The checks of DirLock without creating or locking anything: the name (as
// above), empty, not a directory, or under a file. For commands that validate early.
void check_output_dir_argument(const std::filesystem::path& dir, const std::string& option = "--out");

}  // namespace lra::host
