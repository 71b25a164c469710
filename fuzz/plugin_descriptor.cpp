// Harness: a plugin file as the host reads it before any dlopen: the ELF
// section table, the .lra_plugin descriptor, then the compatibility checks.
#include "fuzz_util.h"
#include "plugins/descriptor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = lra_fuzz::scratch() / "lra_mixer_fuzz.so";
  lra_fuzz::write_file(file, data, size);
  LRA_FUZZ_EXPECT_ERRORS({
    const lra::host::Descriptor d = lra::host::read_descriptor(file);
    (void)lra::host::compatibility_problems(d, lra::host::host_descriptor(), LRA_KIND_MIXER);
    (void)lra::host::compatibility_problems(d, lra::host::host_descriptor(), LRA_KIND_TASK);
    (void)lra::host::capability_names(d.capabilities);
  })
  return 0;
}
