// Harness: a submission bundle as `lrahost verify --reevaluate` unpacks it
// (extract_bundle: names, types, sizes and hashes checked before use).
#include "fuzz_util.h"
#include "reevaluation/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = lra_fuzz::scratch() / "bundle.tar";
  const auto dest = lra_fuzz::scratch() / "unpacked";
  lra_fuzz::write_file(file, data, size);
  std::error_code ec;
  std::filesystem::remove_all(dest, ec);
  LRA_FUZZ_EXPECT_ERRORS({ (void)lra::host::extract_bundle(file, dest); })
  // Nothing may land outside the destination folder.
  for (const auto& e : std::filesystem::directory_iterator(lra_fuzz::scratch(), ec)) {
    const auto name = e.path().filename().string();
    if (name != "bundle.tar" && name != "unpacked") std::abort();
  }
  return 0;
}
