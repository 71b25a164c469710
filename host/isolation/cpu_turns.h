// The verifier and a mixer process take turns on the same cores: while one
// computes, the other waits for its answer. OpenBLAS's worker threads spin
// ~0.1 s after each call before they sleep, so a verifier whose BLAS runs
// on several threads keeps a core busy through the mixer process's turn;
// on one thread it computes its own turn (the feed-forward layers, the
// head) at half speed on 2 cores. CpuTurns keeps the verifier's threads
// and has its workers sleep right after each call instead, for as long as
// it lives. With another BLAS than OpenBLAS it falls back to one thread.
// Measured in bench/isolation (docs/performance.md).
#pragma once

#include <optional>
#include <string>

namespace lra::host {

class CpuTurns {
 public:
  // `threads`: the CPU threads the host was given (--threads).
  explicit CpuTurns(int threads);
  ~CpuTurns();
  CpuTurns(const CpuTurns&) = delete;
  CpuTurns& operator=(const CpuTurns&) = delete;

  // Whether this build's BLAS lets its workers sleep right after a call
  // (OpenBLAS); otherwise turns are taken on one thread.
  static bool workers_can_sleep();

 private:
  int threads_;
  bool sleeping_workers_ = false;
  std::optional<std::string> previous_timeout_;  // OPENBLAS_THREAD_TIMEOUT before, if it was set
};

}  // namespace lra::host
