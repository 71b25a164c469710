#include "reevaluation/source_build.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <vector>

#include "common/sha256.h"
#include "isolation/readable_copy.h"

namespace lra::host {
namespace fs = std::filesystem;

namespace {

// LibTorch's CMake prefix where it is not under /usr (a pip torch: its
// torch/share/cmake), found from the libtorch_cpu.so this process runs; the
// sandbox binds the torch folder read-only. nullopt: Debian's, under /usr.
std::optional<fs::path> torch_outside_usr() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t at = line.find('/');
    if (at == std::string::npos || line.find("libtorch_cpu.so") == std::string::npos) continue;
    std::error_code ec;
    const fs::path lib = fs::canonical(line.substr(at), ec);
    if (ec || lib.string().rfind("/usr/", 0) == 0 && lib.string().rfind("/usr/local/", 0) != 0) return std::nullopt;
    const fs::path torch = lib.parent_path().parent_path();  // torch/lib/libtorch_cpu.so
    if (fs::is_directory(torch / "share" / "cmake", ec)) return torch;
    return std::nullopt;
  }
  return std::nullopt;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

std::optional<fs::path> installed_sdk_prefix() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path prefix = exe.parent_path().parent_path();
  if (!fs::is_regular_file(prefix / "lib" / "cmake" / "LraSdk" / "LraSdkConfig.cmake", ec)) return std::nullopt;
  return prefix;
}

SourceBuild build_plugin_source(const SourceBuildOptions& o) {
  SourceBuild b;
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path cmake = "/usr/bin/cmake";
  if (access(cmake.c_str(), X_OK) != 0) {
    b.failure = "cannot build its bundled source: this verifier has no /usr/bin/cmake (apt-get install cmake "
                "ninja-build)";
    return b;
  }
  const bool ninja = access("/usr/bin/ninja", X_OK) == 0;
  const fs::path src = o.area / "source", work = o.area / "build";
  copy_readable_tree(o.source, src);
  fs::create_directories(work);
  std::string prefix_path = o.sdk.string();
  SandboxMounts mounts;
  mounts.read_only = {src, o.sdk};
  if (const auto torch = torch_outside_usr()) {
    prefix_path += ";" + (*torch / "share" / "cmake").string();
    mounts.read_only.push_back(*torch);
  }
  const fs::path tree = work / "tree";
  const std::vector<std::string> configure = {cmake.string(), "-S", src.string(), "-B", tree.string(), "-G",
                                              ninja ? "Ninja" : "Unix Makefiles", "-DCMAKE_BUILD_TYPE=Release",
                                              "-DCMAKE_PREFIX_PATH=" + prefix_path};
  const std::vector<std::string> build = {cmake.string(), "--build", tree.string(), "--parallel",
                                          std::to_string(std::max(1, o.threads))};
  b.recipe = joined(configure) + " && " + joined(build);
  SandboxLimits limits = o.limits;
  limits.env.clear();  // nothing of the verifier's choosing besides the fixed variables
  for (const auto& [step, argv] : {std::pair<const char*, std::vector<std::string>>{"configure", configure},
                                   {"build", build}}) {
    const auto left = limits.timeout_seconds -
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    SandboxLimits step_limits = limits;
    step_limits.timeout_seconds = std::max(1, static_cast<int>(left));
    const SandboxOutcome out = run_in_sandbox(argv, work, step_limits, mounts, o.sandboxed);
    b.log += "$ " + joined(argv) + "\n" + out.log_tail + "[" + step + ": " + out.describe() + "]\n";
    if (out.exit_code != 0) {
      b.failure = std::string("its bundled source did not ") + step + " with the installed SDK (" + out.describe() +
                  "); the build's output is in the maintainer's local log";
      b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return b;
    }
  }
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<fs::path> made;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(tree, ec))
    if (e.is_regular_file() && !e.is_symlink() && e.path().extension() == ".so") made.push_back(e.path());
  if (made.size() != 1) {
    b.failure = "its bundled source built " + std::to_string(made.size()) +
                " shared libraries at the top of its build folder; a bundle's source builds exactly one plugin";
    return b;
  }
  // The product is copied out of the folder the build could write, and read from there on.
  b.so = o.area / "built-plugin.so";
  copy_readable(made.front(), b.so);
  b.sha256 = sha256_file(b.so);
  return b;
}

}  // namespace lra::host
