// Running code from a submission without trusting it: the command runs under
// bubblewrap (Debian's `bwrap`) in a file system that holds only what it
// needs (the system's programs and libraries, a few loader files of /etc, the
// command itself, the host's own libraries, the caller's read-only paths and
// one writable scratch folder), as the unprivileged user nobody (65534) of its
// own user namespace even when the verifier is root, with no network (a fresh
// network namespace), its own PID, IPC and UTS namespaces, no capabilities, a
// new session, an empty environment but for a few fixed variables, resource
// limits (processes, file size, address space, CPU time, no core files) and a
// wall-clock limit after which the whole process tree is killed. Its output
// comes back through a pipe, bounded: nothing is read back by a path it
// controls. The full list is in docs/leaderboard.md ("The re-evaluation sandbox").
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lra::host {

struct SandboxLimits {
  int64_t memory_bytes = 32ll << 30;  // RLIMIT_AS, capped at the physical memory
  int timeout_seconds = 3600;         // wall clock; RLIMIT_CPU follows from it
  bool gpu = false;                   // bind the NVIDIA device nodes (CUDA re-evaluation)
  int64_t file_size_bytes = 4ll << 30;  // RLIMIT_FSIZE: the largest file it may write
  int max_processes = 512;            // RLIMIT_NPROC: processes and threads of the sandbox's user
  // Variables set inside besides PATH, HOME, TMPDIR and LANG (which they cannot
  // replace), e.g. OMP_NUM_THREADS. Nothing of the caller's environment goes in.
  std::map<std::string, std::string> env;
};

struct SandboxMounts {
  // Files or folders the command reads, bound read-only at the same absolute path.
  std::vector<std::filesystem::path> read_only;
};

struct SandboxOutcome {
  int exit_code = -1;       // the command's exit status, -1 when killed by a signal
  int signal = 0;           // the signal that ended it, 0 when it exited
  bool timed_out = false;
  std::string log_tail;     // the last kSandboxLogTailBytes of its stdout+stderr
  std::string describe() const;  // "exit 0", "killed by signal 9 (time limit 30 s)", ...
};

// How much of the command's output is kept; the rest is read and dropped.
inline constexpr size_t kSandboxLogTailBytes = 64 << 10;

// Why the sandbox cannot be used here (bwrap missing, or it cannot create
// namespaces on this machine), tried once with a trivial command; nullopt
// when it works.
std::optional<std::string> sandbox_unavailable();

// The descriptor number at which a started command finds its channel
// (SandboxProcess's `channel`): a socket to the verifier, the only way in or
// out besides its bounded output.
inline constexpr int kSandboxChannelFd = 3;

// A command running in the sandbox while the caller talks to it over a
// channel (isolation/mixer_process.h). Its output is drained in the
// background into the bounded tail; the wall-clock limit holds from the
// start; the whole process tree is killed when it ends, at the limit, on
// kill_now() and in the destructor, whichever comes first.
class SandboxProcess {
 public:
  // As run_in_sandbox; `channel` (>= 0, the caller keeps its own copy) is
  // passed to the command as kSandboxChannelFd. A command that could not be
  // started is already finished, with the reason in its log tail.
  SandboxProcess(const std::vector<std::string>& argv, const std::filesystem::path& scratch,
                 const SandboxLimits& limits, const SandboxMounts& mounts, bool sandboxed, int channel);
  ~SandboxProcess();
  SandboxProcess(const SandboxProcess&) = delete;
  SandboxProcess& operator=(const SandboxProcess&) = delete;

  bool finished() const;
  // Waits for the command's end (until its wall-clock limit at most).
  SandboxOutcome finish();
  // Kills the tree now, then finish().
  SandboxOutcome kill_now();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Runs argv[0] (an absolute path) with its arguments inside the sandbox.
// `scratch` (an existing folder) is the only writable place, the working
// directory, HOME and TMPDIR; when the verifier is root it is handed to user
// nobody, who writes there. `sandboxed` false runs the same command
// unconfined (for machines without user namespaces, when the caller asked for
// it explicitly), still with the clean environment and the other limits.
SandboxOutcome run_in_sandbox(const std::vector<std::string>& argv, const std::filesystem::path& scratch,
                              const SandboxLimits& limits, const SandboxMounts& mounts, bool sandboxed = true);

}  // namespace lra::host
