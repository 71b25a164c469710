// Starting a command in the sandbox and watching it (isolation/sandbox.h):
// fork, descriptors, resource limits, the output drained into a bounded tail,
// the wall clock, and the whole tree killed at its end; what the command sees
// is sandbox_mounts.cpp's.
#include "isolation/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "isolation/sandbox_mounts.h"

namespace lra::host {
namespace fs = std::filesystem;
using namespace sandbox_detail;

namespace {

// The last `cap` bytes of a stream of any length.
struct Tail {
  size_t cap;
  std::string kept;
  uint64_t dropped = 0;
  void add(const char* p, size_t n) {
    kept.append(p, n);
    if (kept.size() > 2 * cap) {
      dropped += kept.size() - cap;
      kept.erase(0, kept.size() - cap);
    }
  }
  std::string text() {
    if (kept.size() > cap) {
      dropped += kept.size() - cap;
      kept.erase(0, kept.size() - cap);
    }
    return dropped ? "[" + std::to_string(dropped) + " earlier bytes of output dropped]\n" + kept : kept;
  }
};

void set_limit(int resource, uint64_t soft, uint64_t hard) {
  const rlimit r{static_cast<rlim_t>(soft), static_cast<rlim_t>(hard)};
  setrlimit(resource, &r);
}

// A pidfd of the sandbox's init from bwrap's --info-fd JSON ({"child-pid": N, ...}),
// -1 before it is complete. The pidfd holds on to that very process: its PID
// cannot be reused under us. Checked to be PID 1 of a namespace of its own.
int open_sandbox_init(const std::string& info) {
  const size_t key = info.find("\"child-pid\"");
  if (key == std::string::npos) return -1;
  size_t at = info.find_first_of("0123456789", key);
  if (at == std::string::npos) return -1;
  size_t end = info.find_first_not_of("0123456789", at);
  if (end == std::string::npos) return -1;  // maybe more digits to come
  const long pid = std::stol(info.substr(at, end - at));
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (fd < 0) return -1;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("NSpid:", 0) == 0) {
      std::istringstream ss(line.substr(6));
      std::vector<long> ids;
      for (long id; ss >> id;) ids.push_back(id);
      if (ids.size() >= 2 && ids.front() == pid && ids.back() == 1) return fd;
    }
  close(fd);
  return -1;
}

}  // namespace

std::string SandboxOutcome::describe() const {
  if (timed_out) return "stopped at the time limit (killed)";
  if (signal) return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit " + std::to_string(exit_code);
}

struct SandboxProcess::State {
  SandboxOutcome out;
  pid_t pid = -1;
  int output = -1, info = -1;
  std::chrono::steady_clock::time_point deadline;
  std::atomic<bool> kill_requested{false}, done{false};
  std::thread watcher;
  std::mutex finishing;

  // Starts the command (SandboxProcess's constructor); a failure to start is a finished outcome.
  void start(const std::vector<std::string>& argv, const fs::path& scratch, const SandboxLimits& limits,
             const SandboxMounts& mounts, bool sandboxed, int channel);

  // Polls the pipes, reaps the command, enforces the deadline; then kills
  // whatever of the tree is left and keeps the outcome.
  void watch() {
    Tail tail{kSandboxLogTailBytes, {}};
    std::string info_text;
    int init_pidfd = -1;
    bool exited = false;
    int status = 0;
    char buf[1 << 16];
    // Reads what is there now; closes the pipe at its end.
    auto drain = [&](int& fd, auto&& sink) {
      for (;;) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) sink(buf, static_cast<size_t>(n));
        else if (n == 0) return close(fd), fd = -1, void();
        else if (errno != EINTR) return;
      }
    };
    auto to_tail = [&](const char* p, size_t n) { tail.add(p, n); };
    auto to_info = [&](const char* p, size_t n) {
      if (info_text.size() < 4096) info_text.append(p, n);
    };
    auto poll_pipes = [&](int ms) {
      pollfd p[2] = {{output, POLLIN, 0}, {info, POLLIN, 0}};
      if (output < 0 && info < 0) return std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      if (poll(p, 2, ms) <= 0) return;
      if (output >= 0 && p[0].revents) drain(output, to_tail);
      if (info >= 0 && p[1].revents) {
        drain(info, to_info);
        if (init_pidfd < 0) init_pidfd = open_sandbox_init(info_text);
      }
    };
    while (!exited) {
      poll_pipes(50);
      const pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) exited = true;
      else if (kill_requested || std::chrono::steady_clock::now() >= deadline) {
        out.timed_out = !kill_requested;
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        exited = true;
      }
    }
    // Nothing of the submission outlives its evaluation: bwrap's group, and the
    // sandbox's init, whose end takes every process of its PID namespace along
    // (bwrap's --die-with-parent does not hold once it has changed the uid).
    kill(-pid, SIGKILL);
    if (init_pidfd < 0 && info >= 0) {
      drain(info, to_info);
      init_pidfd = open_sandbox_init(info_text);
    }
    if (init_pidfd >= 0) {
      syscall(SYS_pidfd_send_signal, init_pidfd, SIGKILL, nullptr, 0);
      close(init_pidfd);
    }
    // What is still in the pipe; nothing can keep the verifier waiting past a second.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (output >= 0 && std::chrono::steady_clock::now() < until) poll_pipes(50);
    for (int* fd : {&output, &info})
      if (*fd >= 0) close(*fd), *fd = -1;
    if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
    out.log_tail = tail.text();
    done = true;
  }
};

SandboxProcess::SandboxProcess(const std::vector<std::string>& argv, const fs::path& scratch,
                               const SandboxLimits& limits, const SandboxMounts& mounts, bool sandboxed, int channel)
    : s_(std::make_unique<State>()) {
  s_->start(argv, scratch, limits, mounts, sandboxed, channel);
}

void SandboxProcess::State::start(const std::vector<std::string>& argv_in, const fs::path& scratch_in,
                                  const SandboxLimits& limits, const SandboxMounts& mounts, bool sandboxed,
                                  int channel) {
  auto not_started = [&](std::string why) {
    out.log_tail = std::move(why);
    done = true;
  };
  std::error_code ec;
  const fs::path scratch = fs::canonical(scratch_in, ec);
  if (ec || argv_in.empty())
    return not_started("sandbox: " + (argv_in.empty() ? std::string("no command") : "no scratch folder " + scratch_in.string()));
  std::vector<std::string> argv = argv_in;
  // Run the file itself: a symlink on the way to it is not inside.
  if (const fs::path exe = fs::canonical(argv[0], ec); !ec) argv[0] = exe.string();

  int userns_fd = -1;
  std::vector<std::string> full;
  // Descriptors the command keeps, in this order from 3: the channel, the
  // user namespace, bwrap's info pipe.
  const int first_kept = channel >= 0 ? kSandboxChannelFd + 1 : kSandboxChannelFd;
  if (sandboxed) {
    if (geteuid() == 0) {
      std::string why;
      userns_fd = nobody_user_namespace(why);
      if (userns_fd < 0) return not_started("sandbox: cannot make a user namespace for user nobody: " + why);
      // nobody writes its output there; the verifier, root, still reads it.
      if (chown(scratch.c_str(), kNobody, kNobody) != 0) {
        close(userns_fd);
        return not_started("sandbox: cannot hand " + scratch.string() + " to user nobody: " + std::strerror(errno));
      }
    }
    full = bwrap_prefix(find_bwrap(), argv, scratch, limits, mounts, userns_fd >= 0 ? first_kept : -1,
                        userns_fd >= 0 ? first_kept + 1 : first_kept);
  }
  full.insert(full.end(), argv.begin(), argv.end());
  std::vector<char*> cargv;
  for (auto& s : full) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env = clean_environment(scratch, limits);
  std::vector<char*> cenv;
  for (auto& s : env) cenv.push_back(s.data());
  cenv.push_back(nullptr);

  // Limits computed here: after fork only async-signal-safe calls are made.
  const uint64_t phys = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t address_space = std::min<uint64_t>(static_cast<uint64_t>(limits.memory_bytes), phys);
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const uint64_t cpu_seconds = static_cast<uint64_t>(limits.timeout_seconds) * static_cast<uint64_t>(cores) + 10;

  // The command's stdout+stderr, and bwrap's --info-fd (the host PID of the
  // sandbox's init, which outlives bwrap when a child of it lingers).
  int output[2], info[2] = {-1, -1};
  if (pipe2(output, O_CLOEXEC) != 0 || (sandboxed && pipe2(info, O_CLOEXEC) != 0)) {
    if (userns_fd >= 0) close(userns_fd);
    return not_started(std::string("sandbox: pipe: ") + std::strerror(errno));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {output[0], output[1], info[0], info[1], userns_fd})
      if (fd >= 0) close(fd);
    return not_started(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);  // one process group: the time limit kills the whole tree
    dup2(output[1], STDOUT_FILENO);
    dup2(output[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    // Descriptors to keep go first above any number they could collide with,
    // then to 3, 4, ... (dup2 clears O_CLOEXEC there).
    int high[3] = {-1, -1, -1};
    const int keep[3] = {channel, userns_fd, info[1]};
    for (int i = 0; i < 3; ++i)
      if (keep[i] >= 0) high[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, 10);
    int next = kSandboxChannelFd;
    for (int i = 0; i < 3; ++i)
      if (high[i] >= 0) dup2(high[i], next++);
    // No other descriptor of the verifier's (a key file, a socket) reaches the command.
    close_range(static_cast<unsigned>(next), ~0U, 0);
    // An AddressSanitizer build (LRA_SANITIZE, a developer build) reserves
    // ~15 TB of virtual shadow memory at start, which any address-space limit
    // refuses: there the sandbox keeps every other limit but this one.
#ifndef __SANITIZE_ADDRESS__
    set_limit(RLIMIT_AS, address_space, address_space);
#endif
    set_limit(RLIMIT_CORE, 0, 0);
    set_limit(RLIMIT_FSIZE, static_cast<uint64_t>(limits.file_size_bytes),
              static_cast<uint64_t>(limits.file_size_bytes));
    set_limit(RLIMIT_CPU, cpu_seconds, cpu_seconds + 5);
    // Counted per user namespace and uid, so only the sandbox's own processes
    // count: nobody of the fresh namespace (root's real uid would be exempt).
    if (sandboxed)
      set_limit(RLIMIT_NPROC, static_cast<uint64_t>(limits.max_processes),
                static_cast<uint64_t>(limits.max_processes));
    execve(cargv[0], cargv.data(), cenv.data());
    const char* msg = "sandbox: cannot start the command\n";
    (void)!write(STDERR_FILENO, msg, std::strlen(msg));
    _exit(127);
  }
  close(output[1]);
  if (info[1] >= 0) close(info[1]);
  if (userns_fd >= 0) close(userns_fd);
  setpgid(pid, pid);
  fcntl(output[0], F_SETFL, O_NONBLOCK);
  if (info[0] >= 0) fcntl(info[0], F_SETFL, O_NONBLOCK);
  this->pid = pid;
  this->output = output[0];
  this->info = info[0];
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limits.timeout_seconds);
  watcher = std::thread([this] { watch(); });
}

SandboxProcess::~SandboxProcess() { kill_now(); }

bool SandboxProcess::finished() const { return s_->done; }

SandboxOutcome SandboxProcess::finish() {
  const std::lock_guard<std::mutex> lock(s_->finishing);
  if (s_->watcher.joinable()) s_->watcher.join();
  return s_->out;
}

SandboxOutcome SandboxProcess::kill_now() {
  s_->kill_requested = true;
  return finish();
}

SandboxOutcome run_in_sandbox(const std::vector<std::string>& argv, const fs::path& scratch,
                              const SandboxLimits& limits, const SandboxMounts& mounts, bool sandboxed) {
  return SandboxProcess(argv, scratch, limits, mounts, sandboxed, -1).finish();
}

std::optional<std::string> sandbox_unavailable() {
  const std::string bwrap = find_bwrap();
  if (bwrap.empty())
    return "bubblewrap is not installed (no bwrap in /usr/bin); install it: apt-get install bubblewrap";
  char tmpl[] = "/tmp/lrahost-sandbox-probe-XXXXXX";
  if (!mkdtemp(tmpl)) return std::string("cannot create a probe folder in /tmp: ") + std::strerror(errno);
  const fs::path dir = tmpl;
  SandboxLimits limits;
  limits.memory_bytes = 1ll << 30;
  limits.timeout_seconds = 30;
  const SandboxOutcome o = run_in_sandbox({"/bin/true"}, dir, limits, SandboxMounts{});
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (o.exit_code == 0) return std::nullopt;
  std::string why = o.log_tail;
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  return "bwrap cannot create a sandbox on this machine (" + o.describe() + (why.empty() ? "" : ": " + why) +
         "); user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone)";
}

}  // namespace lra::host
