// A working folder that a killed verifier does not leave behind for good:
// made under `parent` with a name starting with `prefix`, holding an flock
// on its own ".held" file for as long as the object lives. The kernel drops
// the lock when the process dies however it dies (kill -9 included), so the
// next verifier that sweeps the same parent removes the folders whose lock it
// can take. Used for the sandbox area under /tmp, for the folder a
// re-evaluation fills before it becomes --out, and for run --isolate's
// staging folder.
#pragma once

#include <filesystem>
#include <string>

namespace lra::host {

class HeldFolder {
 public:
  // mkdtemp(parent/prefixXXXXXX) with `mode`; Error(storage) if it cannot.
  HeldFolder(const std::filesystem::path& parent, const std::string& prefix, std::filesystem::perms mode);
  ~HeldFolder();  // removes the folder unless released
  HeldFolder(const HeldFolder&) = delete;
  HeldFolder& operator=(const HeldFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Keeps the folder's contents: the caller moved them away (or wants them).
  void release() { released_ = true; }

  // Removes every folder parent/prefix* of this user whose lock nobody holds.
  // Returns how many it removed.
  static int sweep_abandoned(const std::filesystem::path& parent, const std::string& prefix);

  static constexpr const char* kLockName = ".held";

 private:
  std::filesystem::path path_;
  int lock_fd_ = -1;
  bool released_ = false;
};

}  // namespace lra::host
