// Harness: a manifest file (TOML, schema lrahost.manifest/v1) as `run
// --manifest FILE` reads it: parse_manifest, then the resolved configuration.
#include "fuzz_util.h"
#include "manifest/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  LRA_FUZZ_EXPECT_ERRORS({
    const lra::host::Manifest m = lra::host::parse_manifest(text, "fuzz.toml");
    (void)lra::host::to_json(m).dump();
    (void)lra::host::trial_seeds(m);
  })
  return 0;
}
