#include "reevaluation/sandbox.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace lra::host {
namespace fs = std::filesystem;

namespace {

std::string find_bwrap() {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
    const fs::path p = fs::path(dir) / "bwrap";
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

std::vector<std::string> bwrap_prefix(const std::string& bwrap, const fs::path& scratch, const SandboxLimits& limits) {
  // The whole file system read-only (the host binary, its plugins and the
  // bundle may lie anywhere, /tmp included), the scratch folder the only
  // writable place and the temporary directory of whatever runs inside.
  std::vector<std::string> v = {bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"};
  v.insert(v.end(), {"--bind", scratch.string(), scratch.string(), "--setenv", "TMPDIR", scratch.string(),
                     "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--chdir",
                     scratch.string()});
  if (limits.gpu) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev", ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("nvidia", 0) == 0) v.insert(v.end(), {"--dev-bind", e.path().string(), e.path().string()});
    }
  }
  v.push_back("--");
  return v;
}

std::string tail_of(const fs::path& file, size_t max_bytes) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > max_bytes) s = "..." + s.substr(s.size() - max_bytes);
  return s;
}

}  // namespace

std::string SandboxOutcome::describe() const {
  if (timed_out) return "stopped at the time limit (killed)";
  if (signal) return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit " + std::to_string(exit_code);
}

SandboxOutcome run_in_sandbox(const std::vector<std::string>& argv, const fs::path& scratch,
                              const SandboxLimits& limits, const SandboxMounts&, bool sandboxed) {
  std::vector<std::string> full;
  if (sandboxed) full = bwrap_prefix(find_bwrap(), scratch, limits);
  full.insert(full.end(), argv.begin(), argv.end());
  const fs::path log = scratch / "sandbox.log";
  std::vector<char*> cargv;
  for (auto& s : full) cargv.push_back(s.data());
  cargv.push_back(nullptr);

  SandboxOutcome out;
  const pid_t pid = fork();
  if (pid < 0) {
    out.log_tail = std::string("fork failed: ") + std::strerror(errno);
    return out;
  }
  if (pid == 0) {
    setpgid(0, 0);  // one process group: the time limit kills the whole tree
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    // An AddressSanitizer build (LRA_SANITIZE, a developer build) reserves
    // ~15 TB of virtual shadow memory at start, which any address-space limit
    // refuses: there the sandbox keeps every other limit but this one.
#ifndef __SANITIZE_ADDRESS__
    rlimit as{static_cast<rlim_t>(limits.memory_bytes), static_cast<rlim_t>(limits.memory_bytes)};
    setrlimit(RLIMIT_AS, &as);
#endif
    rlimit core{0, 0};
    setrlimit(RLIMIT_CORE, &core);
    execv(cargv[0], cargv.data());
    std::fprintf(stderr, "cannot start %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limits.timeout_seconds);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      out.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  kill(-pid, SIGKILL);  // nothing of the submission outlives its evaluation
  out.log_tail = tail_of(log, 4000);
  return out;
}

std::optional<std::string> sandbox_unavailable() {
  const std::string bwrap = find_bwrap();
  if (bwrap.empty())
    return "bubblewrap is not installed (no bwrap in /usr/bin); install it: apt-get install bubblewrap";
  char tmpl[] = "/tmp/lrahost-sandbox-probe-XXXXXX";
  if (!mkdtemp(tmpl)) return std::string("cannot create a probe folder in /tmp: ") + std::strerror(errno);
  const fs::path dir = tmpl;
  const SandboxOutcome o = run_in_sandbox({"/bin/true"}, dir, SandboxLimits{1ll << 30, 30, false}, SandboxMounts{});
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (o.exit_code == 0) return std::nullopt;
  std::string why = o.log_tail;
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  return "bwrap cannot create a sandbox on this machine (" + o.describe() + (why.empty() ? "" : ": " + why) +
         "); user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone)";
}

}  // namespace lra::host
