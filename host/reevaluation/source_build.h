// Building a compiled mixer from the source its bundle carries
// (reevaluation/bundle_source.h), so that the code a re-evaluation runs is
// the code a reviewer can read. The recipe is fixed and the verifier's:
//   cmake -S <source> -B <build> -G Ninja -DCMAKE_BUILD_TYPE=Release
//         -DCMAKE_PREFIX_PATH=<the installed SDK>[;<LibTorch's CMake prefix>]
//   cmake --build <build> --parallel <threads>
// both in the sandbox (isolation/sandbox.h: no network, user nobody, the
// source read-only, one writable build folder), against the SDK installed
// with this lrahost. The product is the one shared library at the top of the
// build folder. The verifier hashes it and hands it to the mixer process; the
// build's output goes to the maintainer's local log only (never published).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "isolation/sandbox.h"

namespace lra::host {

// <dir of lrahost>/.. when it holds lib/cmake/LraSdk/LraSdkConfig.cmake
// (an installed lrahost, `cmake --install`); nullopt otherwise (a build tree).
std::optional<std::filesystem::path> installed_sdk_prefix();

struct SourceBuildOptions {
  std::filesystem::path source;  // the unpacked sources/<sha256> folder
  std::filesystem::path area;    // an empty folder of the sandbox area, for a copy and the build
  std::filesystem::path sdk;     // the SDK's install prefix
  SandboxLimits limits;          // timeout_seconds: configure and build together
  bool sandboxed = true;
  int threads = 1;
};

struct SourceBuild {
  std::optional<std::string> failure;  // the verifier's words; nullopt when it built
  std::filesystem::path so;            // the plugin it built
  std::string sha256;                  // of `so`
  double seconds = 0;
  std::string log;                     // configure and build output (local log only)
  std::string recipe;                  // the commands, for the report
};

SourceBuild build_plugin_source(const SourceBuildOptions& o);

}  // namespace lra::host
