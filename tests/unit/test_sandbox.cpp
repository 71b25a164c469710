// The re-evaluation sandbox (isolation/sandbox.h), attacked as submitted
// plugin code would (issue 31): each attack runs inside and must fail, and
// where it makes sense the same command unconfined succeeds, so the check can
// fail; the real lrahost with LibTorch still runs inside.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "isolation/sandbox.h"

namespace lra::host {
namespace {
namespace fs = std::filesystem;

struct Tmp {
  fs::path path;
  // in_tmp false: under the working directory (the build tree, like the data cache a verifier keeps).
  explicit Tmp(bool in_tmp = true) {
    std::string t = (in_tmp ? std::string("/tmp") : fs::current_path().string()) + "/lra-sandbox-test-XXXXXX";
    path = mkdtemp(t.data());
  }
  ~Tmp() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

SandboxLimits limits(int timeout_seconds = 60, int64_t memory = 1ll << 30) {
  SandboxLimits l;
  l.memory_bytes = memory;
  l.timeout_seconds = timeout_seconds;
  return l;
}

SandboxOutcome sh(const std::string& cmd, const fs::path& scratch, const SandboxLimits& l = limits(),
                  bool sandboxed = true) {
  return run_in_sandbox({"/bin/bash", "-c", cmd}, scratch, l, SandboxMounts{}, sandboxed);
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// A process's command line, or "" once it has exited. Read with read(2), not a stream: a process
// that exits mid-read makes the read fail with ESRCH, which libstdc++'s filebuf throws (seen in CI).
std::string cmdline_of(const fs::path& proc_entry) {
  std::string out;
  const int fd = open((proc_entry / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (ssize_t got; (got = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(got));
  close(fd);
  return out;
}

// How many processes on the host carry `marker` in their command line. Processes come and go
// while /proc is listed (other tests run in parallel), so no step of the listing may throw.
int processes_with(const std::string& marker) {
  int n = 0;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec))
    n += contains(cmdline_of(it->path()), marker);
  return n;
}

// True once no process carries `marker` (the kernel needs a moment to tear down a PID namespace).
bool all_gone(const std::string& marker) {
  for (int i = 0; i < 100; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(100)))
    if (processes_with(marker) == 0) return true;
  return false;
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = sandbox_unavailable()) GTEST_SKIP() << *why;
  }
};

TEST_F(SandboxTest, ReadingEtcShadowFindsNoSuchFile) {
  Tmp scratch;
  const auto o = sh("cat /etc/shadow && echo READ-SHADOW; ls /etc", scratch.path);
  EXPECT_FALSE(contains(o.log_tail, "READ-SHADOW")) << o.log_tail;
  EXPECT_TRUE(contains(o.log_tail, "/etc/shadow: No such file or directory")) << o.log_tail;
  if (access("/etc/shadow", R_OK) == 0) {  // the verifier could read it: the check above can fail
    const auto free = sh("cat /etc/shadow >/dev/null && echo READ-SHADOW", scratch.path, limits(), false);
    EXPECT_TRUE(contains(free.log_tail, "READ-SHADOW")) << free.log_tail;
  }
}

TEST_F(SandboxTest, HomeFoldersHostTmpAndTheDataCacheAreInvisible) {
  Tmp scratch, host_tmp, data(false);  // data: a folder of the build tree, as a verifier's data cache
  std::ofstream(host_tmp.path / "marker") << "host tmp";
  std::ofstream(data.path / "test_batch.bin") << "labels";
  fs::permissions(data.path / "test_batch.bin", fs::perms::owner_read | fs::perms::owner_write);
  std::string cmd;
  for (const fs::path p : {fs::path("/root"), fs::path("/home"), fs::path("/run"), fs::path("/var"),
                           host_tmp.path / "marker", data.path / "test_batch.bin"})
    cmd += "test -e " + p.string() + " && echo VISIBLE:" + p.string() + "; ";
  const auto o = sh(cmd + "echo checked", scratch.path);
  EXPECT_EQ(o.exit_code, 0) << o.log_tail;
  EXPECT_TRUE(contains(o.log_tail, "checked")) << o.log_tail;
  EXPECT_FALSE(contains(o.log_tail, "VISIBLE")) << o.log_tail;
  const auto free = sh(cmd + "echo checked", scratch.path, limits(), false);
  EXPECT_TRUE(contains(free.log_tail, "VISIBLE:" + (host_tmp.path / "marker").string())) << free.log_tail;
  EXPECT_TRUE(contains(free.log_tail, "VISIBLE:" + (data.path / "test_batch.bin").string())) << free.log_tail;
}

TEST_F(SandboxTest, AUnixSocketOnTheHostIsNotEvenVisible) {
  Tmp scratch, sockets;
  const std::string path = (sockets.path / "agent.sock").string();
  const int s = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(s, 4), 0);
  const std::string cmd = "test -S " + path + " && echo SOCKET-VISIBLE || echo no-socket";
  const auto o = sh(cmd, scratch.path);
  EXPECT_TRUE(contains(o.log_tail, "no-socket")) << o.log_tail;
  const auto free = sh(cmd, scratch.path, limits(), false);
  EXPECT_TRUE(contains(free.log_tail, "SOCKET-VISIBLE")) << free.log_tail;
  fcntl(s, F_SETFL, O_NONBLOCK);
  EXPECT_LT(accept(s, nullptr, nullptr), 0) << "something connected to the host's socket";
  close(s);
}

TEST_F(SandboxTest, RunsAsNobodyInItsOwnPidNamespace) {
  Tmp scratch;
  const auto o = sh("echo uid=$(id -u) gid=$(id -g); test -e /proc/" + std::to_string(getpid()) +
                        " && echo SEES-HOST-PID; echo procs=$(ls /proc | grep -c '^[0-9]')",
                    scratch.path);
  EXPECT_EQ(o.exit_code, 0) << o.log_tail;
  EXPECT_TRUE(contains(o.log_tail, "uid=65534 gid=65534")) << o.log_tail;
  EXPECT_FALSE(contains(o.log_tail, "SEES-HOST-PID")) << o.log_tail;
  // bwrap's init, bash, ls and grep: a handful, not the host's hundreds.
  const size_t at = o.log_tail.find("procs=");
  ASSERT_NE(at, std::string::npos) << o.log_tail;
  EXPECT_LE(std::stoi(o.log_tail.substr(at + 6)), 6) << o.log_tail;
}

TEST_F(SandboxTest, TheCallersEnvironmentDoesNotGoIn) {
  Tmp scratch;
  setenv("LRA_TEST_SECRET_TOKEN", "s3cret-value", 1);
  SandboxLimits l = limits();
  l.env["OMP_NUM_THREADS"] = "3";
  l.env["HOME"] = "/root";  // cannot replace the fixed ones
  for (bool sandboxed : {true, false}) {
    const auto o = sh("env", scratch.path, l, sandboxed);
    EXPECT_EQ(o.exit_code, 0) << o.log_tail;
    EXPECT_FALSE(contains(o.log_tail, "s3cret-value")) << o.log_tail;
    EXPECT_TRUE(contains(o.log_tail, "OMP_NUM_THREADS=3\n")) << o.log_tail;
    EXPECT_TRUE(contains(o.log_tail, "HOME=" + fs::canonical(scratch.path).string() + "\n")) << o.log_tail;
    EXPECT_TRUE(contains(o.log_tail, "TMPDIR=" + fs::canonical(scratch.path).string() + "\n")) << o.log_tail;
    EXPECT_TRUE(contains(o.log_tail, "PATH=/usr/bin:/bin\n")) << o.log_tail;
  }
  unsetenv("LRA_TEST_SECRET_TOKEN");
}

// The BLAS kernels the verifier runs on go in (device/blas_kernels.h): the
// judged code computes on the same ones.
TEST_F(SandboxTest, TheVerifiersBlasKernelsGoIn) {
  Tmp scratch;
  const char* before = std::getenv("OPENBLAS_CORETYPE");
  const std::string kept = before ? before : "";
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  for (bool sandboxed : {true, false}) {
    const auto o = sh("env", scratch.path, limits(), sandboxed);
    EXPECT_EQ(o.exit_code, 0) << o.log_tail;
    EXPECT_TRUE(contains(o.log_tail, "OPENBLAS_CORETYPE=Haswell\n")) << o.log_tail;
  }
  if (before) setenv("OPENBLAS_CORETYPE", kept.c_str(), 1);
  else unsetenv("OPENBLAS_CORETYPE");
}

TEST_F(SandboxTest, ADescriptorTheVerifierHoldsOpenDoesNotGoIn) {
  Tmp scratch, secrets;
  std::ofstream(secrets.path / "key.pem") << "PRIVATE";
  const int fd = open((secrets.path / "key.pem").c_str(), O_RDONLY);  // no O_CLOEXEC, as a careless caller
  ASSERT_GE(fd, 0);
  const std::string cmd = "cat /proc/self/fd/" + std::to_string(fd) + " <&- 2>/dev/null || echo no-descriptor";
  const auto o = sh(cmd, scratch.path);
  const auto free = sh(cmd, scratch.path, limits(), false);
  close(fd);
  EXPECT_FALSE(contains(o.log_tail, "PRIVATE")) << o.log_tail;
  EXPECT_TRUE(contains(o.log_tail, "no-descriptor")) << o.log_tail;
  EXPECT_FALSE(contains(free.log_tail, "PRIVATE")) << free.log_tail;
}

// Issue 43: the mixer process's channel to the verifier is descriptor 3,
// confined or not, and nothing else of the verifier's goes in with it.
TEST_F(SandboxTest, TheChannelIsDescriptorThreeInsideAndOut) {
  for (bool sandboxed : {true, false}) {
    SCOPED_TRACE(sandboxed ? "sandboxed" : "unconfined");
    Tmp scratch;
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    const int other = open("/etc/hostname", O_RDONLY);  // not O_CLOEXEC: still must not go in
    SandboxProcess p({"/bin/bash", "-c", "read line <&3; echo \"got $line\" >&3; readlink /proc/$$/fd/*; true"}, scratch.path,
                     limits(), SandboxMounts{}, sandboxed, pair[1]);
    close(pair[1]);
    ASSERT_EQ(write(pair[0], "ping\n", 5), 5);
    char buf[64] = {};
    ssize_t n = 0, got = 0;
    while (got < 9 && (n = read(pair[0], buf + got, sizeof buf - 1 - got)) > 0) got += n;
    EXPECT_EQ(std::string(buf, static_cast<size_t>(got)), "got ping\n");
    close(pair[0]);
    const SandboxOutcome o = p.finish();
    EXPECT_EQ(o.exit_code, 0) << o.log_tail;
    // bash's descriptors: its input (/dev/null), its output pipe, the channel and, confined, the
    // descriptor of the user namespace it runs in (bubblewrap keeps it open); no other file of the
    // verifier's (here /etc/hostname, opened without O_CLOEXEC).
    std::istringstream lines(o.log_tail);
    int sockets = 0;
    for (std::string line; std::getline(lines, line);) {
      sockets += line.rfind("socket:", 0) == 0;
      EXPECT_TRUE(line == "/dev/null" || line.rfind("pipe:", 0) == 0 || line.rfind("socket:", 0) == 0 ||
                  (sandboxed && line.rfind("user:", 0) == 0))
          << line << "\n" << o.log_tail;
    }
    EXPECT_EQ(sockets, 1) << o.log_tail;
    close(other);
  }
}

// kill_now() ends a command that would run for a minute, at once, its tree with it.
TEST_F(SandboxTest, KillNowEndsTheCommandAtOnce) {
  Tmp scratch;
  const auto start = std::chrono::steady_clock::now();
  SandboxProcess p({"/bin/sleep", "60"}, scratch.path, limits(), SandboxMounts{}, true, -1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(p.finished());
  const SandboxOutcome o = p.kill_now();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(o.exit_code, -1);
  EXPECT_FALSE(o.timed_out);
  EXPECT_TRUE(p.finished());
}

TEST_F(SandboxTest, OnlyTheScratchFolderIsWritable) {
  Tmp outside(false), scratch;
  const std::string cmd = "echo in > ok && echo in > " + (scratch.path / "ok2").string() + "; echo out > " +
                          (outside.path / "escaped").string() + " 2>&1 || echo refused; echo x > /usr/x || echo ro";
  const auto o = sh(cmd, scratch.path);
  EXPECT_EQ(o.exit_code, 0) << o.log_tail;
  EXPECT_TRUE(fs::exists(scratch.path / "ok")) << o.log_tail;
  EXPECT_TRUE(fs::exists(scratch.path / "ok2")) << o.log_tail;
  EXPECT_FALSE(fs::exists(outside.path / "escaped"));
  EXPECT_TRUE(contains(o.log_tail, "refused")) << o.log_tail;
  EXPECT_TRUE(contains(o.log_tail, "Read-only file system")) << o.log_tail;
  // A root verifier's scratch is written by the real user nobody, not by root.
  if (geteuid() == 0) {
    struct stat st {};
    ASSERT_EQ(stat((scratch.path / "ok").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534u);
  }
  // The same command unconfined does write there: the check above can fail.
  const auto free = sh(cmd, scratch.path, limits(), false);
  EXPECT_EQ(free.exit_code, 0);
  EXPECT_TRUE(fs::exists(outside.path / "escaped"));
}

TEST_F(SandboxTest, HasNoNetwork) {
  // A listener on the host's loopback, which the sandboxed process must not reach.
  const int server = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(server, 4), 0);
  socklen_t len = sizeof addr;
  getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  Tmp scratch;
  // bash's /dev/tcp opens a real TCP connection.
  const std::string cmd = "exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo connected || echo no-connection";
  const auto o = sh(cmd, scratch.path);
  EXPECT_TRUE(contains(o.log_tail, "no-connection")) << o.log_tail;
  const auto free = sh(cmd, scratch.path, limits(), false);
  EXPECT_TRUE(contains(free.log_tail, "connected")) << free.log_tail;
  close(server);
}

TEST_F(SandboxTest, AForkBombIsStoppedAndLeavesNothingBehind) {
  Tmp scratch;
  const std::string marker = "lra-fork-bomb-" + std::to_string(getpid());
  SandboxLimits l = limits(20);
  l.max_processes = 64;
  const auto start = std::chrono::steady_clock::now();
  const auto o = sh("f(){ f | f & }; f; sleep 2; : " + marker, scratch.path, l);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_TRUE(contains(o.log_tail, "Resource temporarily unavailable")) << o.log_tail.substr(0, 2000);
  EXPECT_TRUE(all_gone(marker)) << processes_with(marker) << " processes of the fork bomb are still running";
  // An honest command with a few dozen processes runs under the same limit.
  const auto honest = sh("for i in $(seq 20); do sleep 0.2 & done; wait; echo all-done", scratch.path, l);
  EXPECT_EQ(honest.exit_code, 0) << honest.log_tail;
  EXPECT_TRUE(contains(honest.log_tail, "all-done")) << honest.log_tail;
}

TEST_F(SandboxTest, AProcessLeftRunningInTheBackgroundIsKilled) {
  Tmp scratch;
  const std::string marker = "lra-daemon-" + std::to_string(getpid());
  const auto o = sh("(exec -a " + marker + " sleep 300) & echo started", scratch.path);
  EXPECT_EQ(o.exit_code, 0) << o.log_tail;
  EXPECT_TRUE(all_gone(marker)) << "the background process outlived the evaluation";
}

TEST_F(SandboxTest, AFileBiggerThanTheCapCannotBeWritten) {
  Tmp scratch;
  SandboxLimits l = limits();
  l.file_size_bytes = 1 << 20;
  const auto big = sh("head -c 3000000 /dev/zero > big; echo rc=$?", scratch.path, l);
  EXPECT_FALSE(contains(big.log_tail, "rc=0")) << big.log_tail;
  EXPECT_LE(fs::file_size(scratch.path / "big"), 1u << 20);
  const auto small = sh("head -c 500000 /dev/zero > small; echo rc=$?", scratch.path, l);
  EXPECT_TRUE(contains(small.log_tail, "rc=0")) << small.log_tail;
  EXPECT_EQ(fs::file_size(scratch.path / "small"), 500000u);
}

TEST_F(SandboxTest, HundredMegabytesOfOutputLeaveABoundedTail) {
  Tmp scratch;
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  const auto o = sh("head -c 100000000 /dev/zero | tr '\\0' a; echo; echo THE-END", scratch.path);
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(o.exit_code, 0) << o.describe();
  EXPECT_LE(o.log_tail.size(), kSandboxLogTailBytes + 100);
  EXPECT_TRUE(contains(o.log_tail, "THE-END")) << o.log_tail.substr(o.log_tail.size() - 200);
  EXPECT_TRUE(contains(o.log_tail, "earlier bytes of output dropped")) << o.log_tail.substr(0, 200);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 32 * 1024) << "KiB of peak memory grew while reading the output";
  EXPECT_FALSE(fs::exists(scratch.path / "sandbox.log"));
}

TEST_F(SandboxTest, TimeAndMemoryLimitsStopTheProcess) {
  Tmp scratch;
  const auto slow = run_in_sandbox({"/bin/sleep", "30"}, scratch.path, limits(1), SandboxMounts{});
  EXPECT_TRUE(slow.timed_out);
  EXPECT_NE(slow.exit_code, 0);
#ifdef __SANITIZE_ADDRESS__
  // An AddressSanitizer build sets no address-space limit (isolation/sandbox.cpp).
  GTEST_SKIP() << "no memory limit to test in an AddressSanitizer build";
#endif
  // 256 MiB of address space: a shell holding a 400 MB string cannot.
  const auto grab = sh("x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo ${#x}", scratch.path,
                       limits(60, 256ll << 20));
  EXPECT_NE(grab.exit_code, 0) << grab.log_tail;
  const auto small = sh("x=$(head -c 4000000 /dev/zero | tr '\\0' a); echo ${#x}", scratch.path,
                        limits(60, 256ll << 20));
  EXPECT_EQ(small.exit_code, 0) << small.log_tail;
  EXPECT_TRUE(contains(small.log_tail, "4000000")) << small.log_tail;
}

// The binds are enough for the real binary: lrahost with LibTorch loads a
// plugin bound read-only and reads its descriptor inside.
TEST_F(SandboxTest, TheRealLrahostInspectsABoundPluginInside) {
  Tmp scratch;
  const fs::path plugin = fs::path(LRA_FIXTURE_PLUGIN_DIR) / "fixture_honest.so";
  ASSERT_TRUE(fs::exists(plugin)) << plugin;
  const auto version = run_in_sandbox({LRAHOST_BIN, "--version"}, scratch.path, limits(), SandboxMounts{});
  EXPECT_EQ(version.exit_code, 0) << version.log_tail;
  const auto o = run_in_sandbox({LRAHOST_BIN, "inspect", plugin.string()}, scratch.path, limits(120),
                                SandboxMounts{{plugin}});
  EXPECT_EQ(o.exit_code, 0) << o.log_tail;
  EXPECT_TRUE(contains(o.log_tail, "fixture_honest")) << o.log_tail;
  // Without the mount the plugin is not there: the bind is what makes it work.
  const auto unbound = run_in_sandbox({LRAHOST_BIN, "inspect", plugin.string()}, scratch.path, limits(120),
                                      SandboxMounts{});
  EXPECT_NE(unbound.exit_code, 0) << unbound.log_tail;
}

}  // namespace
}  // namespace lra::host
