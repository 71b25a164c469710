// Harness: a token id file as `lrahost forget --torchscript --ids FILE` reads
// it (raw little-endian int32): read_ids_file, then validate_ids.
#include "forgetting/corpus.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = lra_fuzz::scratch() / "book.ids";
  lra_fuzz::write_file(file, data, size);
  LRA_FUZZ_EXPECT_ERRORS({
    const auto ids = lra::host::forgetting::read_ids_file(file);
    lra::host::forgetting::validate_ids(ids, 0);
    lra::host::forgetting::validate_ids(ids, 256);
  })
  return 0;
}
