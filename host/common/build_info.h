// Facts about this build of the host, recorded in every result file
// (result.json "host"). Captured when CMake configured the build.
#pragma once

#include <string>

namespace lra::host {

struct BuildInfo {
  std::string version;       // project version, e.g. "0.1.0"
  std::string git_revision;  // full commit hash, or "unknown" outside a git checkout
  bool git_dirty = false;    // tracked files differed from the commit at configure time
  std::string build_type;    // Release, Debug, RelWithDebInfo, ...
  std::string compiler;      // e.g. "GNU 12.2.0"
};

const BuildInfo& build_info();

}  // namespace lra::host
