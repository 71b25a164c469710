// Commands that run many `lrahost run`s (`suite`, `sweep`) start each as its
// own process: a crash, an out-of-memory kill or a plugin that aborts takes
// down that run only, and the rest go on. Also the list parsing both share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lra::host {

// "a,b,c" -> {"a", "b", "c"}; an empty item ("a,,c", "a,", "") is a usage
// error naming `what`.
std::vector<std::string> split_list(const std::string& s, const std::string& what);

// split_list, and every task must have a manifest for `preset` and appear
// once: a usage error naming the unknown task and the known ones (the one check `suite
// --tasks` and `sweep --tasks` share, made before anything is written).
std::vector<std::string> checked_task_list(const std::string& s, const std::string& preset, const std::string& what,
                                           const std::string& protocol = "scratch");

// "0,1,2" -> {0, 1, 2}; anything but distinct integers >= 0 is a usage error naming `what`.
std::vector<int64_t> parse_seed_list(const std::string& s, const std::string& what);

// This executable's absolute path (from /proc/self/exe, without the
// " (deleted)" of a file replaced since it started).
std::string self_path();

// Runs this executable (the file it started from, even when replaced since:
// /proc/self/exe) with `args`, stdout and stderr appended to `log_file`
// (created with its folders); waits and returns the exit code (128 + signal
// when killed). Throws lra::Error(internal) only when it cannot start.
int run_self(const std::vector<std::string>& args, const std::string& log_file);

// The last line of `log_file` that looks like an error ("error:" / "ERROR"),
// else its last non-empty line; "" when unreadable. What a summary shows.
std::string last_error_line(const std::string& log_file);

// Why a child run failed, for a summary: its error line without the
// "lrahost: error: " prefix (a plugin crash reads "plugin 'X' crashed
// (SIGSEGV) in forward at step N ..."), or, when the child was killed by a
// signal and printed no error, "killed by SIGKILL (exit 137)".
std::string child_failure(int exit_code, const std::string& log_file);

// The last line of DIR/run.log when it is an error (every error that ends a
// run is; docs/cli.md), else "".
std::string run_log_error(const std::string& run_dir);

}  // namespace lra::host
