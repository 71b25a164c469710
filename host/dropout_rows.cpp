// The host's side of lra/dropout.h's forward-pass record: one per thread,
// exported from the lrahost executable (host/CMakeLists.txt) so that plugins,
// which refer to it weakly, share the trainer's description of the pass and
// draw world-size-independent dropout masks. Defined here, in the executable
// only, not in a host library: a test executable may offer its own.
#include "lra/dropout.h"

extern "C" __attribute__((visibility("default"))) lra_dropout_rows* lra_dropout_rows_v1(void) {
  static thread_local lra_dropout_rows rows{};
  return &rows;
}
