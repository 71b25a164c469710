// Harness: a Pathfinder / Path-X metadata file (metadata/<b>.npy, text rows
// "imgs/<b> sample_<i>.png <x> <label>") as the task reads a release folder:
// parse_metadata on the text, then read_dataset over a folder whose
// metadata/0.npy is the input and whose imgs/0/ holds a few valid 32x32 PNGs
// (sample_0..3.png) and a zero-byte one (sample_4.png), as the release has.
#include "fuzz_util.h"
#include "pathfinder_data.h"
#include "png_io.h"

namespace {

const lra_fuzz::fs::path& dataset() {
  static const lra_fuzz::fs::path d = [] {
    const auto dir = lra_fuzz::scratch() / "pathfinder32" / "curv_baseline";
    lra_fuzz::fs::create_directories(dir / "metadata");
    lra_fuzz::fs::create_directories(dir / "imgs" / "0");
    for (int i = 0; i < 4; ++i) {
      lra::tasks::GrayImage img;
      img.width = img.height = 32;
      img.pixels.assign(32 * 32, static_cast<uint8_t>(60 * i));
      lra::tasks::write_png_gray((dir / "imgs" / "0" / ("sample_" + std::to_string(i) + ".png")).string(), img);
    }
    lra_fuzz::write_file(dir / "imgs" / "0" / "sample_4.png", "");
    return dir;
  }();
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = dataset();
  const std::string text(reinterpret_cast<const char*>(data), size);
  LRA_FUZZ_EXPECT_ERRORS({
    std::vector<lra::pathfinder::ImageRef> rows;
    lra::pathfinder::parse_metadata(text, "0.npy", dir.string(), &rows);
  })
  lra_fuzz::write_file(dir / "metadata" / "0.npy", text);
  LRA_FUZZ_EXPECT_ERRORS({
    lra::Split train, val, test;
    lra::pathfinder::ReadReport report;
    lra::pathfinder::read_dataset(dir.string(), 32, 1, &train, &val, &test, &report);
  })
  return 0;
}
