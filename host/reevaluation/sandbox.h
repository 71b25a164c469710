// Running code from a submission without trusting it: the command runs under
// bubblewrap (Debian's `bwrap`) with no network (a fresh network namespace
// whose loopback reaches nothing of the host's), the whole file system
// read-only except one scratch folder (also its TMPDIR), no capabilities, a
// new session, its own PID namespace, an address-space limit (not in an
// AddressSanitizer build, whose shadow memory no such limit allows) and a
// wall-clock limit after which the whole process tree is killed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lra::host {

struct SandboxLimits {
  int64_t memory_bytes = 32ll << 30;  // RLIMIT_AS of the sandboxed process tree
  int timeout_seconds = 3600;
  bool gpu = false;                   // bind the NVIDIA device nodes (CUDA re-evaluation)
};

struct SandboxOutcome {
  int exit_code = -1;       // the command's exit status, -1 when killed by a signal
  int signal = 0;           // the signal that ended it, 0 when it exited
  bool timed_out = false;
  std::string log_tail;     // the last lines of its stdout+stderr
  std::string describe() const;  // "exit 0", "killed by signal 9 (time limit 30 s)", ...
};

// Why the sandbox cannot be used here (bwrap missing, or it cannot create
// namespaces on this machine), tried once with a trivial command; nullopt
// when it works.
std::optional<std::string> sandbox_unavailable();

// Runs argv[0] (an absolute path) with its arguments inside the sandbox.
// `scratch` (an existing folder) is the only writable place; the output goes
// to scratch/sandbox.log. `sandboxed` false runs the same command unconfined
// (for machines without user namespaces, when the caller asked for it
// explicitly), still with the memory and time limits.
struct SandboxMounts {
  std::vector<std::filesystem::path> read_only;  // files or folders, bound read-only at the same path
};
SandboxOutcome run_in_sandbox(const std::vector<std::string>& argv, const std::filesystem::path& scratch,
                              const SandboxLimits& limits, const SandboxMounts& mounts, bool sandboxed = true);

}  // namespace lra::host
