// Starts lrahost in the background and waits for a line of its log.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "cli_harness.h"

namespace lra::test {

// Waits until the log holds `needle` or lrahost ends, stops it and returns the
// log ("" if it could not start). No fixed deadline short of an hour: under the
// sanitizer build, generating official data takes minutes where the plain build
// takes seconds; the hour only ends a run that hangs.
inline std::string lrahost_log_until(const std::string& args, const std::filesystem::path& log,
                                     const std::string& needle) {
  const pid_t pid = spawn_lrahost(args, log);
  if (pid <= 0) return "";
  std::string out;
  bool ended = false;
  for (int i = 0; i < 36000 && !ended && out.find(needle) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ended = waitpid(pid, nullptr, WNOHANG) == pid;
    out = read_text(log);
  }
  if (!ended) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  return out;
}

}  // namespace lra::test
