// Harness: one ListOps split file (TSV: header, Source and Target columns) as
// the listops task reads it (read_tsv).
#include "fuzz_util.h"
#include "tsv_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = lra_fuzz::scratch() / "basic_train.tsv";
  lra_fuzz::write_file(file, data, size);
  LRA_FUZZ_EXPECT_ERRORS({
    lra::listops::ReadReport report;
    (void)lra::listops::read_tsv(file.string(), &report);
  })
  return 0;
}
