#include "runs/child_runs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "common/atomic_file.h"
#include "common/text.h"
#include "lra/status.h"
#include "manifest/manifest.h"
#include "manifest/presets.h"

extern "C" char** environ;

namespace lra::host {

namespace fs = std::filesystem;

std::vector<std::string> split_list(const std::string& s, const std::string& what) {
  // Every element counts: "0,,1" or "0,1," is a typo, never a shorter list.
  if (const auto empty = text::empty_list_item(s))
    throw Error(ErrorKind::usage, what + " '" + text::visible_text(s) + "': element " + std::to_string(*empty + 1) +
                                      " is empty (an empty item is a typo, not a shorter list); give a comma-separated "
                                      "list without empty elements, e.g. 0,1,2");
  std::vector<std::string> out = text::split_list(s);
  if (out.empty()) throw Error(ErrorKind::usage, what + ": expected a comma-separated list, got '" + s + "'");
  return out;
}

std::vector<std::string> checked_task_list(const std::string& s, const std::string& preset, const std::string& what,
                                           const std::string& protocol) {
  const auto tasks = split_list(s, what);
  // An unknown preset: usage error listing the presets. The forgetting
  // manifest is `lrahost forget`'s, not a task a run trains.
  auto known = preset_tasks(preset, protocol);
  known.erase(std::remove(known.begin(), known.end(), std::string(kForgettingTask)), known.end());
  for (auto t = tasks.begin(); t != tasks.end(); ++t) {
    if (std::find(known.begin(), known.end(), *t) == known.end())
      throw Error(ErrorKind::usage,
                  what + ": '" + *t + "' has no " + preset + (protocol == "scratch" ? "" : " " + protocol) +
                      " manifest (tasks: " + text::join(known) + ")");
    if (std::find(tasks.begin(), t, *t) != t)  // the same runs twice, into the same folders
      throw Error(ErrorKind::usage, what + ": '" + *t + "' appears twice");
  }
  return tasks;
}

std::vector<int64_t> parse_seed_list(const std::string& s, const std::string& what) {
  std::vector<int64_t> seeds;
  for (const auto& item : split_list(s, what)) {
    int64_t v = -1;
    if (item.find_first_not_of("0123456789") == std::string::npos) {  // no sign, no blanks
      try {
        size_t used = 0;
        v = std::stoll(item, &used);
        if (used != item.size()) v = -1;
      } catch (const std::exception&) {
        v = -1;  // beyond 2^63-1
      }
    }
    if (v < 0)
      throw Error(ErrorKind::usage, what + ": '" + item + "' is not a seed (an integer in 0..9223372036854775807)");
    if (std::find(seeds.begin(), seeds.end(), v) != seeds.end())  // "0,00": the same seed spelt twice
      throw Error(ErrorKind::usage, what + ": seed " + item + " appears twice");
    seeds.push_back(v);
  }
  return seeds;
}

std::string self_path() {
  std::error_code ec;
  std::string p = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) return "lrahost";
  // A program whose file was replaced since it started (a rebuild, an upgrade)
  // reads as "PATH (deleted)": PATH is where its successor now is.
  constexpr std::string_view kDeleted = " (deleted)";
  if (p.size() > kDeleted.size() && p.compare(p.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0)
    p.resize(p.size() - kDeleted.size());
  return p;
}

namespace {

// The child run of run_self, for the handlers (one at a time: suite and sweep
// run their children one after another on the main thread).
volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_stop_signal = 0;

// SIGTERM/SIGINT while a child runs: passed on to it, and remembered so the
// parent stops after the child has gone (waitpid below), rather than dying
// first and leaving it behind. Async-signal-safe: kill() only.
void forward_stop_signal(int sig) {
  g_stop_signal = sig;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

}  // namespace

int run_self(const std::vector<std::string>& args, const std::string& log_file) {
  fs::create_directories(fs::path(log_file).parent_path());
  const std::string self = self_path();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(self.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // Opened here: between fork and exec only async-signal-safe calls are made.
  const int log_fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw Error(ErrorKind::storage, storage_failure(log_file, "cannot open the run's log", errno));

  struct sigaction forward {}, old_term {}, old_int {};
  forward.sa_handler = forward_stop_signal;
  sigemptyset(&forward.sa_mask);
  // Blocked across fork, so the handler never sees a half-set g_child.
  sigset_t stop, before;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigprocmask(SIG_BLOCK, &stop, &before);
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGINT, &forward, &old_int);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // The child dies with its parent, even by SIGKILL (no handler runs
    // then). PR_SET_PDEATHSIG survives exec (not of set-uid files) and the
    // sweep entry's own exec into `run`. A parent that died before prctl is
    // caught by the getppid() check. Note: it fires when the forking
    // *thread* ends; run_self is called from the main thread.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(128 + SIGTERM);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    sigprocmask(SIG_SETMASK, &before, nullptr);
    if (dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0) _exit(127);
    // The program that is running, even when its file was replaced since it
    // started (a rebuild or an upgrade in the middle of a suite): every run of
    // a suite is one build's. By path only where there is no /proc.
    execv("/proc/self/exe", argv.data());
    execv(self.c_str(), argv.data());
    _exit(127);
  }
  const int fork_errno = errno;
  close(log_fd);
  if (pid > 0) g_child = pid;
  sigprocmask(SIG_SETMASK, &before, nullptr);  // a pending SIGTERM is delivered now, and forwarded
  if (pid < 0) {
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGINT, &old_int, nullptr);
    throw Error(ErrorKind::internal, "could not start " + self + ": " + std::strerror(fork_errno));
  }
  int status = 0;
  int wait_errno = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      wait_errno = errno;
      break;
    }
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  g_child = 0;
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
  const int stop_signal = g_stop_signal;
  g_stop_signal = 0;
  sigprocmask(SIG_SETMASK, &before, nullptr);
  if (wait_errno != 0) throw Error(ErrorKind::internal, std::string("waitpid: ") + std::strerror(wait_errno));
  if (stop_signal != 0) {
    // The parent was asked to stop: its child is gone; now it goes too, by
    // the same signal (its default action), starting no further run. What
    // the child wrote (checkpoints) lets the same command continue later.
    std::fprintf(stderr, "lrahost: stopped by %s; the interrupted run keeps its checkpoints: run the same command "
                         "again to continue\n", stop_signal == SIGTERM ? "SIGTERM" : "SIGINT");
    signal(stop_signal, SIG_DFL);
    raise(stop_signal);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string last_error_line(const std::string& log_file) {
  std::ifstream in(log_file);
  std::string line, last, error;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    last = line;
    if (line.find("error:") != std::string::npos || line.find("ERROR") != std::string::npos ||
        line.find("[error]") != std::string::npos || line.find("internal error") != std::string::npos)
      error = line;
  }
  return error.empty() ? last : error;
}

namespace {

bool is_error_line(const std::string& line) {
  return line.find("error:") != std::string::npos || line.find("ERROR") != std::string::npos ||
         line.find("[error]") != std::string::npos || line.find("internal error") != std::string::npos;
}

std::string without_prefix(std::string line) {
  for (const char* p : {"lrahost: error: ", "lrahost: "})
    if (line.rfind(p, 0) == 0) return line.substr(std::strlen(p));
  return line;
}

}  // namespace

std::string child_failure(int exit_code, const std::string& log_file) {
  const std::string line = last_error_line(log_file);
  if (is_error_line(line) || exit_code <= 128) return without_prefix(line);
  const int sig = exit_code - 128;
  const char* name = sig == SIGKILL   ? "SIGKILL"
                     : sig == SIGTERM ? "SIGTERM"
                     : sig == SIGSEGV ? "SIGSEGV"
                     : sig == SIGABRT ? "SIGABRT"
                     : sig == SIGBUS  ? "SIGBUS"
                     : sig == SIGFPE  ? "SIGFPE"
                     : sig == SIGINT  ? "SIGINT"
                                      : nullptr;
  std::string what = std::string("killed by ") + (name ? std::string(name) : "signal " + std::to_string(sig)) +
                     " (exit " + std::to_string(exit_code) + ")";
  if (!line.empty()) what += "; last output: " + line;
  return what;
}

std::string run_log_error(const std::string& run_dir) {
  std::ifstream in(fs::path(run_dir) / "run.log");
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return is_error_line(last) ? without_prefix(last) : "";
}

}  // namespace lra::host
