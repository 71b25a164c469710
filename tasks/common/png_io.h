// 8-bit grayscale PNG reading and writing (libspng), shared by the image tasks
// and the Pathfinder generator. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lra::tasks {

struct GrayImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // row-major, height * width
};

// The largest side lrahost decodes (Path-X: 128; the generator's largest: 256).
// Checked on the header, before any pixel buffer is allocated.
inline constexpr int kMaxPngSide = 4096;

struct PngSize {
  int width = 0, height = 0;
};

// The image size from the PNG header only (nothing is decoded). Throws
// lra::Error(data) naming `path` when the bytes are not a PNG or a side is
// beyond kMaxPngSide.
PngSize read_png_size(const uint8_t* data, size_t size, const std::string& path);

// Decodes a PNG of any colour type to 8-bit gray (colour is reduced with the
// same luma weights as LRA's rgb_to_grayscale). Throws lra::Error(data) naming
// `path` when the bytes are not a valid PNG, a side is beyond kMaxPngSide or,
// when `expect` has a positive width, the header's size is not `expect` (all
// checked before the pixel buffer is allocated).
GrayImage decode_png_gray(const uint8_t* data, size_t size, const std::string& path, PngSize expect = {});
GrayImage read_png_gray(const std::string& path, PngSize expect = {});

// Encodes an 8-bit single-channel ("L") PNG. `level` is the zlib level (0-9);
// fast levels keep dataset generation from being dominated by compression.
std::vector<uint8_t> encode_png_gray(const GrayImage& img, int level = 1);
// Writes atomically enough for datasets: to `path` directly (callers write
// into a staging folder that is renamed once complete).
void write_png_gray(const std::string& path, const GrayImage& img, int level = 1);

}  // namespace lra::tasks
