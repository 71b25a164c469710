#include "runs/child_runs.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/text.h"
#include "lra/status.h"

extern "C" char** environ;

namespace lra::host {

namespace fs = std::filesystem;

std::vector<std::string> split_list(const std::string& s, const std::string& what) {
  // Every element counts: "0,,1" or "0,1," is a typo, never a shorter list.
  if (const auto empty = text::empty_list_item(s))
    throw Error(ErrorKind::usage, what + " '" + text::visible_text(s) + "': element " + std::to_string(*empty + 1) +
                                      " is empty; give a comma-separated list without empty elements, e.g. 0,1,2");
  std::vector<std::string> out = text::split_list(s);
  if (out.empty()) throw Error(ErrorKind::usage, what + ": expected a comma-separated list, got '" + s + "'");
  return out;
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
    if (std::find(seeds.begin(), seeds.end(), v) != seeds.end())
      throw Error(ErrorKind::usage, what + ": seed " + item + " appears twice");
    seeds.push_back(v);
  }
  return seeds;
}

std::string self_path() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("lrahost") : p.string();
}

int run_self(const std::vector<std::string>& args, const std::string& log_file) {
  fs::create_directories(fs::path(log_file).parent_path());
  const std::string self = self_path();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(self.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  posix_spawn_file_actions_t io;
  posix_spawn_file_actions_init(&io);
  posix_spawn_file_actions_addopen(&io, STDOUT_FILENO, log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&io, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), &io, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&io);
  if (rc != 0) throw Error(ErrorKind::internal, "could not start " + self + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(ErrorKind::internal, std::string("waitpid: ") + std::strerror(errno));
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
