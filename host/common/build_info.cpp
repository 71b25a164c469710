#include "common/build_info.h"

// Defined for this file only by host/common/CMakeLists.txt.
#ifndef LRA_HOST_VERSION
#define LRA_HOST_VERSION "unknown"
#endif
#ifndef LRA_GIT_REVISION
#define LRA_GIT_REVISION "unknown"
#endif
#ifndef LRA_GIT_DIRTY
#define LRA_GIT_DIRTY 0
#endif
#ifndef LRA_BUILD_TYPE
#define LRA_BUILD_TYPE "unknown"
#endif
#ifndef LRA_COMPILER
#define LRA_COMPILER "unknown"
#endif

namespace lra::host {

const BuildInfo& build_info() {
  static const BuildInfo info{
      LRA_HOST_VERSION,
      LRA_GIT_REVISION,
      LRA_GIT_DIRTY != 0,
      LRA_BUILD_TYPE[0] != '\0' ? LRA_BUILD_TYPE : "unknown",
      LRA_COMPILER,
  };
  return info;
}

}  // namespace lra::host
