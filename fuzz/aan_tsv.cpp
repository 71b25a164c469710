// Harness: one Retrieval split file (AAN pairs TSV: label, id1, id2, text1,
// text2) as the retrieval task reads it: all records, then a capped subset.
#include "aan_reader.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = lra_fuzz::scratch() / "new_aan_pairs.train.tsv";
  lra_fuzz::write_file(file, data, size);
  LRA_FUZZ_EXPECT_ERRORS({
    lra::retrieval::ReadReport report;
    (void)lra::retrieval::read_aan_tsv(file.string(), 4000, 0, 0, &report);
    (void)lra::retrieval::read_aan_tsv(file.string(), 64, 2, 7, &report);
  })
  return 0;
}
