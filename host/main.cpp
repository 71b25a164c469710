// lrahost entry point: runs the CLI and maps errors to the documented exit
// codes (0 ok, 1 internal, 2 usage, 3 plugin rejected or failed, 4 rules, 5 data,
// 7 out of memory, 8 output not writable; 6, a crash inside plugin code, comes
// from the handler in common/plugin_calls.cpp).
#include <csignal>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include <c10/util/Exception.h>

#include "cli/app.h"
#include "common/out_of_memory.h"
#include "common/plugin_calls.h"
#include "device/blas_kernels.h"
#include "lra/status.h"

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) write() then fails with EFBIG, which the
  // writers report as exit 8, instead of SIGXFSZ killing the process mid-file.
  std::signal(SIGXFSZ, SIG_IGN);
  lra::host::remember_program_arguments(argv);  // a computing command may start again on better kernels
  try {
    return lra::host::run_cli(argc, argv);
  } catch (const lra::Error& e) {
    std::fprintf(stderr, "lrahost: error: %s\n", e.what());
    lra::host::plugin_calls::append_to_log(std::string("lrahost: error: ") + e.what());  // run.log's last line
    return static_cast<int>(e.kind());
  } catch (const std::bad_alloc& e) {
    // Places that allocate by a size read from input check it first and throw
    // ErrorKind::memory naming what and how big; this is the last resort.
    const std::string line = std::string("lrahost: error: out of memory (") + e.what() +
                             "); lower the batch size, sequence length or --micro-batch";
    std::fprintf(stderr, "%s\n", line.c_str());
    lra::host::plugin_calls::append_to_log(line);
    return static_cast<int>(lra::ErrorKind::memory);
  } catch (const c10::Error& e) {
    // LibTorch's CPU allocator reports a failed allocation as a plain c10::Error
    // ("DefaultCPUAllocator: can't allocate memory: you tried to allocate N bytes"),
    // CUDA's as c10::OutOfMemoryError: both are exit 7, with LibTorch's size.
    const std::string what = e.what_without_backtrace();
    if (lra::host::is_out_of_memory(e)) {
      const std::string line = "lrahost: error: out of memory in LibTorch (" + what.substr(0, what.find('\n')) +
                               "); lower the batch size, sequence length or --micro-batch";
      std::fprintf(stderr, "%s\n", line.c_str());
      lra::host::plugin_calls::append_to_log(line);
      return static_cast<int>(lra::ErrorKind::memory);
    }
    std::fprintf(stderr, "lrahost: internal error (LibTorch): %s\n", e.what_without_backtrace());
    lra::host::plugin_calls::append_to_log(std::string("lrahost: internal error (LibTorch): ") +
                                           e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lrahost: internal error: %s\n", e.what());
    lra::host::plugin_calls::append_to_log(std::string("lrahost: internal error: ") + e.what());
    return 1;
  }
}
