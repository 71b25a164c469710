#include "common/plugin_calls.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "lra/status.h"

namespace lra::host::plugin_calls {
namespace {

// Read by the signal handler: only lock-free atomics and fixed buffers.
char g_plugin[256] = "";
std::atomic<const char*> g_phase{nullptr};
std::atomic<int64_t> g_step{0};
std::atomic<const char*> g_active{nullptr};  // the call in progress (nullptr: host code)
std::atomic<const char*> g_last{nullptr};    // the most recent call entered
std::atomic<int> g_log_fd{-1};
std::mutex g_mutex;  // writers of g_plugin / the log fd

// Async-signal-safe string building into a fixed buffer.
struct Line {
  char buf[1024];
  size_t n = 0;
  void add(const char* s) {
    while (s && *s && n + 1 < sizeof buf) buf[n++] = *s++;
  }
  void add(int64_t v) {
    char tmp[24];
    int i = 0;
    const bool neg = v < 0;
    uint64_t u = neg ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
    do {
      tmp[i++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u && i < 22);
    if (neg) tmp[i++] = '-';
    while (i > 0 && n + 1 < sizeof buf) buf[n++] = tmp[--i];
  }
};

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// "in forward at step 3 (training)" into `l`.
void add_where(Line& l, const char* call) {
  l.add("in ");
  l.add(call ? call : "an unknown call");
  const char* phase = g_phase.load();
  const int64_t step = g_step.load();
  if (phase && std::strcmp(phase, "training") == 0 && step > 0) {
    l.add(" at step ");
    l.add(step);
    l.add(" (training)");
  } else if (phase && step > 0) {
    l.add(" during ");
    l.add(phase);
    l.add(" after step ");
    l.add(step);
  } else if (phase) {
    l.add(" during ");
    l.add(phase);
  }
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGBUS: return "SIGBUS";
    default: return "signal";
  }
}

void on_crash(int sig) {
  Line l;
  const char* active = g_active.load();
  l.add("lrahost: error: ");
  if (active) {
    l.add("plugin '");
    l.add(g_plugin[0] ? g_plugin : "?");
    l.add("' crashed (");
    l.add(signal_name(sig));
    l.add(") ");
    add_where(l, active);
    l.add(": a fault in the plugin's code; exit code 6. Run the same command under gdb to see where, or test the "
          "mixer with `lrahost inspect --check`");
  } else {
    l.add("lrahost crashed (");
    l.add(signal_name(sig));
    l.add(") outside plugin code");
    if (const char* last = g_last.load()) {
      l.add(" (last plugin call: ");
      l.add(g_plugin[0] ? g_plugin : "?");
      l.add(" ");
      add_where(l, last);
      l.add(")");
    }
    l.add("; please report it with the command line");
  }
  l.add("\n");
  write_all(STDERR_FILENO, l.buf, l.n);
  if (const int fd = g_log_fd.load(); fd >= 0) write_all(fd, l.buf, l.n);
  if (active) _exit(kCrashExitCode);
  // Host code: the default action (core dump where enabled), as without this handler.
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void set_plugin(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::strncpy(g_plugin, name.c_str(), sizeof g_plugin - 1);
  g_plugin[sizeof g_plugin - 1] = '\0';
}

std::string plugin() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_plugin;
}

void set_phase(const char* phase, int64_t step) {
  g_phase.store(phase);
  g_step.store(step);
}

Call::Call(const char* what) noexcept : outer_(g_active.exchange(what)) { g_last.store(what); }
Call::~Call() { g_active.store(outer_); }

std::string where(const char* call) {
  Line l;
  add_where(l, call);
  return std::string(l.buf, l.n);
}

void fail(const char* call, const std::string& what) {
  const std::string name = plugin();
  throw Error(ErrorKind::plugin, (name.empty() ? std::string("the mixer") : "plugin '" + name + "'") + " failed " +
                                     where(call) + ": " + what);
}

void out_of_memory(const char* call, const std::string& what) {
  const std::string name = plugin();
  throw Error(ErrorKind::memory, "out of memory in " + (name.empty() ? std::string("the mixer") : "plugin '" + name + "'") +
                                     " " + where(call) + ": " + what +
                                     "; lower the batch size, sequence length, --micro-batch or the mixer's sizes");
}

void set_log_file(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int old = g_log_fd.exchange(fd);
  if (old >= 0) ::close(old);
}

void append_to_log(const std::string& line) {
  const int fd = g_log_fd.load();
  if (fd < 0) return;
  std::string l = line;
  if (l.empty() || l.back() != '\n') l += '\n';
  write_all(fd, l.data(), l.size());
}

void install_crash_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    // An alternate stack: a stack overflow in plugin code is a SIGSEGV too.
    static char stack[64 * 1024];
    stack_t ss{};
    ss.ss_sp = stack;
    ss.ss_size = sizeof stack;
    sigaltstack(&ss, nullptr);
    struct sigaction sa {};
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS}) sigaction(sig, &sa, nullptr);
  });
}

}  // namespace lra::host::plugin_calls
