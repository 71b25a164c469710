#include "isolation/sandbox_mounts.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace lra::host::sandbox_detail {
namespace fs = std::filesystem;

namespace {


// The system's programs and libraries. On Debian 12 /bin, /lib, /lib64 and
// /sbin are symlinks into /usr; where one is a real folder it is bound as is.
constexpr const char* kSystemDirs[] = {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"};
// All of /etc the dynamic loader, LibTorch and OpenBLAS read (found by running
// `lrahost inspect` inside): the loader's cache, and Debian's alternatives
// (symlinks into /usr: libblas.so.3 and liblapack.so.3 resolve through them).
// Nothing with a secret in it.
constexpr const char* kEtcFiles[] = {"/etc/ld.so.cache", "/etc/alternatives"};

}  // namespace

std::string find_bwrap() {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
    const fs::path p = fs::path(dir) / "bwrap";
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

namespace {

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

}  // namespace

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
  for (const auto& [key, value] : sandbox_environment(scratch, limits)) v.insert(v.end(), {"--setenv", key, value});
  v.push_back("--");
  return v;
}

std::map<std::string, std::string> sandbox_environment(const fs::path& scratch, const SandboxLimits& limits) {
  std::map<std::string, std::string> env = limits.env;
  env["PATH"] = "/usr/bin:/bin";
  env["HOME"] = env["TMPDIR"] = scratch.string();
  env["LANG"] = "C.UTF-8";
  // The BLAS kernels this process chose (device/blas_kernels.h): the command
  // computes on the same ones, without starting itself again.
  if (const char* coretype = std::getenv("OPENBLAS_CORETYPE")) env["OPENBLAS_CORETYPE"] = coretype;
  return env;
}

// The environment of the unconfined command: the same fixed variables.
std::vector<std::string> clean_environment(const fs::path& scratch, const SandboxLimits& limits) {
  std::vector<std::string> out;
  for (const auto& [k, v] : sandbox_environment(scratch, limits)) out.push_back(k + "=" + v);
  return out;
}
}  // namespace lra::host::sandbox_detail
