// lrahost entry point: runs the CLI and maps errors to the documented exit
// codes (0 ok, 1 internal, 2 usage, 3 plugin rejected, 4 rules, 5 data).
#include <cstdio>
#include <exception>

#include <c10/util/Exception.h>

#include "cli/app.h"
#include "lra/status.h"

int main(int argc, char** argv) {
  try {
    return lra::host::run_cli(argc, argv);
  } catch (const lra::Error& e) {
    std::fprintf(stderr, "lrahost: error: %s\n", e.what());
    return static_cast<int>(e.kind());
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "lrahost: internal error (LibTorch): %s\n", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lrahost: internal error: %s\n", e.what());
    return 1;
  }
}
