#include "isolation/cpu_turns.h"

#include <cstdlib>

#include "train/trainer.h"

// OpenBLAS reads OPENBLAS_THREAD_TIMEOUT when its workers start (at load,
// before main); these let a running process change it: read the environment
// again, stop the workers, and the next BLAS call starts them with the new
// timeout. Exported by OpenBLAS (0.2.x on); absent with any other BLAS.
extern "C" void openblas_read_env(void) __attribute__((weak));
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace lra::host {
namespace {

constexpr const char* kTimeoutVariable = "OPENBLAS_THREAD_TIMEOUT";
// 2^4 cycles (OpenBLAS's least): a worker sleeps as soon as its call ends.
constexpr const char* kSleepRightAway = "4";
// OpenBLAS's default (2^28 cycles, ~0.1 s): an unset variable leaves the
// timeout as last set, so the default is restored by name.
constexpr const char* kDefaultTimeout = "28";

void restart_workers() {
  openblas_read_env();
  blas_thread_shutdown_();
}

}  // namespace

bool CpuTurns::workers_can_sleep() { return openblas_read_env != nullptr && blas_thread_shutdown_ != nullptr; }

CpuTurns::CpuTurns(int threads) : threads_(threads) {
  if (threads_ > 1 && workers_can_sleep()) {
    if (const char* v = std::getenv(kTimeoutVariable)) previous_timeout_ = v;
    setenv(kTimeoutVariable, kSleepRightAway, 1);
    restart_workers();
    sleeping_workers_ = true;
    configure_cpu_threads(threads_);
  } else {
    configure_cpu_threads(1);
  }
}

CpuTurns::~CpuTurns() {
  if (sleeping_workers_) {
    setenv(kTimeoutVariable, previous_timeout_ ? previous_timeout_->c_str() : kDefaultTimeout, 1);
    restart_workers();  // the workers read the value when they start again, at the next call
    if (!previous_timeout_) unsetenv(kTimeoutVariable);
  }
  configure_cpu_threads(threads_);
}

}  // namespace lra::host
