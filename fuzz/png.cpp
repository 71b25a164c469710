// Harness: a PNG image as the Pathfinder / Path-X readers decode it
// (decode_png_gray: any colour type to 8-bit gray).
#include "fuzz_util.h"
#include "png_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  LRA_FUZZ_EXPECT_ERRORS({
    const lra::tasks::GrayImage img = lra::tasks::decode_png_gray(data, size, "fuzz.png");
    if (img.pixels.size() != static_cast<size_t>(img.width) * static_cast<size_t>(img.height)) std::abort();
  })
  return 0;
}
