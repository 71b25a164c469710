// lrahost entry point: runs the CLI and maps errors to the documented exit
// codes (0 ok, 1 internal, 2 usage, 3 plugin rejected or failed, 4 rules, 5 data;
// 6, a crash inside plugin code, comes from the handler in common/plugin_calls.cpp).
#include <cstdio>
#include <exception>
#include <string>

#include <c10/util/Exception.h>

#include "cli/app.h"
#include "common/plugin_calls.h"
#include "lra/status.h"

int main(int argc, char** argv) {
  try {
    return lra::host::run_cli(argc, argv);
  } catch (const lra::Error& e) {
    std::fprintf(stderr, "lrahost: error: %s\n", e.what());
    lra::host::plugin_calls::append_to_log(std::string("lrahost: error: ") + e.what());  // run.log's last line
    return static_cast<int>(e.kind());
  } catch (const c10::Error& e) {
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
