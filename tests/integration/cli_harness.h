// Runs the lrahost binary as a user would and captures exit code and output.
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <utility>
#include <vector>
#include <fstream>
#include <sstream>
#include <string>

extern "C" char** environ;

namespace lra::test {

struct Outcome {
  int code = -1;
  std::string output;  // stdout and stderr together
};

inline Outcome lrahost(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + " " + LRAHOST_BIN + " " + args + " 2>&1";
  Outcome o;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return o;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.output.append(buf.data(), n);
  const int status = pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lrahost-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const std::filesystem::path& p, const std::string& s) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << s;
}

// Starts lrahost in the background (stdout and stderr to `log`, `env` as
// "NAME=value ..." prefixes) and returns its pid; -1 if it could not start.
inline pid_t spawn_lrahost(const std::string& args, const std::filesystem::path& log, const std::string& env = "") {
  const std::string cmd = "exec env " + env + " " + LRAHOST_BIN + " " + args + " > " + log.string() + " 2>&1";
  pid_t pid = -1;
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char* const*>(argv), environ) != 0) return -1;
  return pid;
}

// The standard output of a shell command (stderr as the command routes it).
inline std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// Where chromium is on PATH, or "" (tests that drive a page then skip, saying so).
inline std::string chromium_path() {
  std::string path = run_capture("command -v chromium 2>/dev/null");
  while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
  return path;
}

inline std::string fixture_plugin(const std::string& name) {
  return std::string(LRA_FIXTURE_PLUGIN_DIR) + "/" + name + ".so";
}

#ifdef LRA_PLUGIN_DIR
// Every mixer this build ships, as {name, what --plugin takes}: the built-in
// plugins in LRA_PLUGIN_DIR, the Python plugin standing for a Python mixer
// by the SDK's example class.
inline std::vector<std::pair<std::string, std::string>> every_mixer_plugin() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(LRA_PLUGIN_DIR))) {
    const std::string file = e.path().filename().string();
    if (file.rfind("lra_mixer_", 0) != 0) continue;
    const std::string name = e.path().stem().string().substr(std::string("lra_mixer_").size());
    out.emplace_back(name, name == "python" ? std::string(LRA_SOURCE_DIR) +
                                                  "/sdk/examples/python/softmax_attention.py:SoftmaxAttention"
                                            : name);
  }
  return out;
}
#endif

}  // namespace lra::test
