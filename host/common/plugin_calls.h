// Where the process is in plugin code, so that faults there are named
// (issue 17): the plugin being run, the call into it ("create", "forward",
// "backward", ...) and the training step. Read by error messages and by the
// crash handler, which turns SIGSEGV, SIGABRT, SIGFPE and SIGBUS inside a
// plugin call into one line naming the plugin and the call, appended to
// run.log too, and exit code kCrashExitCode.
//
// State is process-global (one plugin per lrahost process): plain words and
// fixed buffers, so the signal handler reads it without allocating.
#pragma once

#include <cstdint>
#include <string>

namespace lra::host::plugin_calls {

// Exit code of a process whose plugin crashed (docs/cli.md).
constexpr int kCrashExitCode = 6;

// The plugin this process runs ("" = none yet: messages say "the mixer").
void set_plugin(const std::string& name);
std::string plugin();

// Where training is: `phase` is a string literal ("training", "evaluation",
// "conformance check"); `step` the 1-based training step (0 = before any).
void set_phase(const char* phase, int64_t step);

// Marks the scope of one call into plugin code; `what` is a string literal.
class Call {
 public:
  explicit Call(const char* what) noexcept;
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

 private:
  const char* outer_;
};

// "in forward at step 3 (training)" for the innermost active call, or the last one.
std::string where(const char* call);

// An exception from plugin code (or a broken promise like a wrong shape) as
// the host's plugin error: "plugin 'NAME' failed in forward at step 3
// (training): WHAT". Keeps ErrorKind rules/data when the plugin chose them.
[[noreturn]] void fail(const char* call, const std::string& what);

// An allocation that failed inside plugin code (common/out_of_memory.h) as
// the host's out-of-memory error, exit 7, not the plugin's fault: "out of
// memory in plugin 'NAME' create (...): WHAT; lower ...".
[[noreturn]] void out_of_memory(const char* call, const std::string& what);

// The run log, to which the crash handler and append_to_log write (O_APPEND).
void set_log_file(const std::string& path);
// Appends one line to the run log, if one is set (main() does this with every
// error that ends a run, so it is also run.log's last line).
void append_to_log(const std::string& line);

// Installs the handler for SIGSEGV, SIGABRT, SIGFPE, SIGBUS (once; on an
// alternate stack so a stack overflow is reported too). Outside a plugin
// call the handler prints where the last plugin call was and re-raises the
// signal with its default action.
void install_crash_handler();

}  // namespace lra::host::plugin_calls
