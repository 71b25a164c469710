// Harness: a PNG image as the Pathfinder / Path-X readers decode it
// (decode_png_gray: any colour type to 8-bit gray; with and without the
// size the task expects, checked on the header) and its header alone.
#include "fuzz_util.h"
#include "png_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  LRA_FUZZ_EXPECT_ERRORS({
    const lra::tasks::GrayImage img = lra::tasks::decode_png_gray(data, size, "fuzz.png");
    if (img.pixels.size() != static_cast<size_t>(img.width) * static_cast<size_t>(img.height)) std::abort();
  })
  LRA_FUZZ_EXPECT_ERRORS({ (void)lra::tasks::read_png_size(data, size, "fuzz.png"); })
  LRA_FUZZ_EXPECT_ERRORS({
    const lra::tasks::GrayImage img = lra::tasks::decode_png_gray(data, size, "fuzz.png", {32, 32});
    if (img.width != 32 || img.height != 32 || img.pixels.size() != 32 * 32) std::abort();
  })
  return 0;
}
