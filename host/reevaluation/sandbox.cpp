#include "reevaluation/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace lra::host {
namespace fs = std::filesystem;

namespace {

constexpr int kNobody = 65534;

// The system's programs and libraries. On Debian 12 /bin, /lib, /lib64 and
// /sbin are symlinks into /usr; where one is a real folder it is bound as is.
constexpr const char* kSystemDirs[] = {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"};
// All of /etc the dynamic loader, LibTorch and OpenBLAS read (found by running
// `lrahost inspect` inside): the loader's cache, and Debian's alternatives
// (symlinks into /usr: libblas.so.3 and liblapack.so.3 resolve through them).
// Nothing with a secret in it.
constexpr const char* kEtcFiles[] = {"/etc/ld.so.cache", "/etc/alternatives"};

std::string find_bwrap() {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
    const fs::path p = fs::path(dir) / "bwrap";
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

bool under(const fs::path& p, const fs::path& dir) {
  const auto [d, _] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
  return d == dir.end();
}

// Bound anyway as part of /usr (or a real system folder).
bool in_system_dirs(const fs::path& canonical) {
  if (under(canonical, "/usr")) return true;
  for (const char* d : kSystemDirs) {
    std::error_code ec;
    if (!fs::is_symlink(d, ec) && fs::is_directory(d, ec) && under(canonical, d)) return true;
  }
  return false;
}

// Every executable mapping of this process outside the system folders: the
// host's own shared libraries (the build tree's, LibTorch's where it is not
// under /usr) and plugins it loaded, each bound as a single file. Only
// executable mappings: data the verifier maps (a dataset) never goes in.
std::vector<fs::path> loaded_libraries() {
  std::set<fs::path> files;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // address perms offset dev inode path
    std::istringstream ss(line);
    std::string addr, perms, offset, dev, inode, path;
    ss >> addr >> perms >> offset >> dev >> inode;
    std::getline(ss >> std::ws, path);
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') continue;
    if (path.size() > 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) continue;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || in_system_dirs(path)) continue;
    files.insert(path);
  }
  return {files.begin(), files.end()};
}

// A user namespace in which uid/gid 65534 is the host's nobody, made while the
// verifier is root (which may map any uid). bwrap's own --unshare-user maps
// the caller's uid, and a process whose real uid is root is exempt from
// RLIMIT_NPROC and owns every root-owned file it can reach: as the real
// nobody it is neither. Returns an O_CLOEXEC descriptor of the namespace, or
// -1 with `why` set.
int nobody_user_namespace(std::string& why) {
  int ready[2], done[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return why = std::string("pipe: ") + std::strerror(errno), -1;
  if (pipe2(done, O_CLOEXEC) != 0) {
    close(ready[0]), close(ready[1]);
    return why = std::string("pipe: ") + std::strerror(errno), -1;
  }
  const pid_t pid = fork();
  if (pid == 0) {  // only async-signal-safe calls: the verifier may have threads
    close(ready[0]);
    close(done[1]);  // else its own copy would keep the read below from ever ending
    const int err = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
    (void)!write(ready[1], &err, sizeof err);
    char c;
    (void)!read(done[0], &c, 1);
    _exit(0);
  }
  close(ready[1]);
  close(done[0]);
  int fd = -1;
  int err = pid < 0 ? errno : 0;
  if (pid > 0 && read(ready[0], &err, sizeof err) != static_cast<ssize_t>(sizeof err)) err = EIO;
  if (pid < 0 || err) {
    why = std::string(pid < 0 ? "fork: " : "unshare(CLONE_NEWUSER): ") + std::strerror(err);
  } else {
    const std::string proc = "/proc/" + std::to_string(pid) + "/";
    const std::string map = std::to_string(kNobody) + " " + std::to_string(kNobody) + " 1\n";
    for (const auto& [file, text] : {std::pair<std::string, std::string>{"setgroups", "deny"},
                                     {"uid_map", map}, {"gid_map", map}}) {
      const int w = open((proc + file).c_str(), O_WRONLY | O_CLOEXEC);
      const bool ok = w >= 0 && write(w, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      if (!ok && why.empty()) why = "writing " + proc + file + ": " + std::strerror(errno);
      if (w >= 0) close(w);
    }
    if (why.empty()) {
      fd = open((proc + "ns/user").c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) why = "opening " + proc + "ns/user: " + std::strerror(errno);
    }
  }
  close(done[1]);  // lets the helper exit; the descriptor keeps the namespace
  close(ready[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return fd;
}

std::vector<std::string> bwrap_prefix(const std::string& bwrap, const std::vector<std::string>& argv,
                                      const fs::path& scratch, const SandboxLimits& limits,
                                      const SandboxMounts& mounts, int userns_fd, int info_fd) {
  std::vector<std::string> v = {bwrap, "--info-fd", std::to_string(info_fd)};
  if (userns_fd >= 0) v.insert(v.end(), {"--userns", std::to_string(userns_fd)});
  else v.push_back("--unshare-user");
  v.insert(v.end(), {"--uid", std::to_string(kNobody), "--gid", std::to_string(kNobody), "--unshare-ipc",
                     "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
                     "--new-session", "--cap-drop", "ALL", "--clearenv"});
  // Mounts in order: a later one lands on top of an earlier one.
  v.insert(v.end(), {"--ro-bind", "/usr", "/usr"});
  for (const char* d : kSystemDirs) {
    std::error_code ec;
    if (fs::is_symlink(d, ec)) v.insert(v.end(), {"--symlink", fs::read_symlink(d, ec).string(), d});
    else if (fs::is_directory(d, ec)) v.insert(v.end(), {"--ro-bind", d, d});
  }
  v.insert(v.end(), {"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"});
  for (const char* f : kEtcFiles) v.insert(v.end(), {"--ro-bind-try", f, f});
  std::set<fs::path> files;
  for (const auto& lib : loaded_libraries()) files.insert(lib);
  std::error_code ec;
  const fs::path exe = fs::canonical(argv.at(0), ec);
  if (!ec && !in_system_dirs(exe)) files.insert(exe);
  for (const auto& f : files) v.insert(v.end(), {"--ro-bind", f.string(), f.string()});
  // The scratch folder before the read-only paths: one of those inside it stays read-only.
  v.insert(v.end(), {"--bind", scratch.string(), scratch.string()});
  for (const auto& m : mounts.read_only) {
    const fs::path p = fs::absolute(m).lexically_normal();
    v.insert(v.end(), {"--ro-bind", p.string(), p.string()});
  }
  if (limits.gpu) {
    for (const auto& e : fs::directory_iterator("/dev", ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("nvidia", 0) == 0) v.insert(v.end(), {"--dev-bind", e.path().string(), e.path().string()});
    }
  }
  v.insert(v.end(), {"--chdir", scratch.string()});
  for (const auto& [key, value] : limits.env) v.insert(v.end(), {"--setenv", key, value});
  for (const auto& [key, value] : std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"},
                                                                     {"HOME", scratch.string()},
                                                                     {"TMPDIR", scratch.string()},
                                                                     {"LANG", "C.UTF-8"}})
    v.insert(v.end(), {"--setenv", key, value});
  v.push_back("--");
  return v;
}

// The environment of the unconfined command: the same fixed variables.
std::vector<std::string> clean_environment(const fs::path& scratch, const SandboxLimits& limits) {
  std::map<std::string, std::string> env = limits.env;
  env["PATH"] = "/usr/bin:/bin";
  env["HOME"] = env["TMPDIR"] = scratch.string();
  env["LANG"] = "C.UTF-8";
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

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

SandboxOutcome run_in_sandbox(const std::vector<std::string>& argv_in, const fs::path& scratch_in,
                              const SandboxLimits& limits, const SandboxMounts& mounts, bool sandboxed) {
  SandboxOutcome out;
  std::error_code ec;
  const fs::path scratch = fs::canonical(scratch_in, ec);
  if (ec || argv_in.empty()) {
    out.log_tail = "sandbox: " + (argv_in.empty() ? std::string("no command") : "no scratch folder " + scratch_in.string());
    return out;
  }
  std::vector<std::string> argv = argv_in;
  // Run the file itself: a symlink on the way to it is not inside.
  if (const fs::path exe = fs::canonical(argv[0], ec); !ec) argv[0] = exe.string();

  int userns_fd = -1;
  std::vector<std::string> full;
  if (sandboxed) {
    if (geteuid() == 0) {
      std::string why;
      userns_fd = nobody_user_namespace(why);
      if (userns_fd < 0) {
        out.log_tail = "sandbox: cannot make a user namespace for user nobody: " + why;
        return out;
      }
      // nobody writes its output there; the verifier, root, still reads it.
      if (chown(scratch.c_str(), kNobody, kNobody) != 0) {
        out.log_tail = "sandbox: cannot hand " + scratch.string() + " to user nobody: " + std::strerror(errno);
        close(userns_fd);
        return out;
      }
    }
    // The child moves the namespace's descriptor to fd 3 and bwrap's info pipe after it.
    full = bwrap_prefix(find_bwrap(), argv, scratch, limits, mounts, userns_fd >= 0 ? 3 : -1, userns_fd >= 0 ? 4 : 3);
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
    out.log_tail = std::string("sandbox: pipe: ") + std::strerror(errno);
    if (userns_fd >= 0) close(userns_fd);
    return out;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    out.log_tail = std::string("fork failed: ") + std::strerror(errno);
    for (int fd : {output[0], output[1], info[0], info[1], userns_fd})
      if (fd >= 0) close(fd);
    return out;
  }
  if (pid == 0) {
    setpgid(0, 0);  // one process group: the time limit kills the whole tree
    dup2(output[1], STDOUT_FILENO);
    dup2(output[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    // Descriptors to keep go first above any number they could collide with,
    // then to 3 and 4 (dup2 clears O_CLOEXEC there).
    int next = 3;
    for (int fd : {userns_fd, info[1]}) {
      if (fd < 0) continue;
      const int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
      dup2(high, next++);
    }
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
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limits.timeout_seconds);
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
    pollfd p[2] = {{output[0], POLLIN, 0}, {info[0], POLLIN, 0}};
    if (output[0] < 0 && info[0] < 0) return std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    if (poll(p, 2, ms) <= 0) return;
    if (output[0] >= 0 && p[0].revents) drain(output[0], to_tail);
    if (info[0] >= 0 && p[1].revents) {
      drain(info[0], to_info);
      if (init_pidfd < 0) init_pidfd = open_sandbox_init(info_text);
    }
  };
  while (!exited) {
    poll_pipes(50);
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) exited = true;
    else if (std::chrono::steady_clock::now() >= deadline) {
      out.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      exited = true;
    }
  }
  // Nothing of the submission outlives its evaluation: bwrap's group, and the
  // sandbox's init, whose end takes every process of its PID namespace along
  // (bwrap's --die-with-parent does not hold once it has changed the uid).
  kill(-pid, SIGKILL);
  if (init_pidfd < 0 && info[0] >= 0) {
    drain(info[0], to_info);
    init_pidfd = open_sandbox_init(info_text);
  }
  if (init_pidfd >= 0) {
    syscall(SYS_pidfd_send_signal, init_pidfd, SIGKILL, nullptr, 0);
    close(init_pidfd);
  }
  // What is still in the pipe; nothing can keep the verifier waiting past a second.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (output[0] >= 0 && std::chrono::steady_clock::now() < until) poll_pipes(50);
  for (int fd : {output[0], info[0]})
    if (fd >= 0) close(fd);
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  out.log_tail = tail.text();
  return out;
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
