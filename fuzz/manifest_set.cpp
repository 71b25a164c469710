// Harness: command-line overrides (`--set KEY=VALUE`), one per input line,
// applied in order to the ListOps smoke manifest as `run --set` does.
#include "fuzz_util.h"
#include "manifest/manifest.h"
#include "manifest/presets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const lra::host::Manifest base = lra::host::load_preset("listops", "smoke");
  const std::string text(reinterpret_cast<const char*>(data), size);
  lra::host::Manifest m = base;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    LRA_FUZZ_EXPECT_ERRORS({ lra::host::apply_override(m, text.substr(start, end - start)); })
    start = end + 1;
  }
  LRA_FUZZ_EXPECT_ERRORS({
    lra::host::validate(m);
    (void)lra::host::to_json(m).dump();
  })
  return 0;
}
