#include "png_io.h"

#include <spng.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <fstream>
#include <iterator>
#include <memory>

#include "lra/status.h"

namespace lra::tasks {
namespace {

struct CtxDeleter {
  void operator()(spng_ctx* c) const { spng_ctx_free(c); }
};
using Ctx = std::unique_ptr<spng_ctx, CtxDeleter>;

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw Error(ErrorKind::data, path + ": not a readable PNG image (" + why + ")");
}

}  // namespace

namespace {

// A decoder over `data` whose header has been read and checked against the
// limits (and `expect`, when given).
Ctx open_checked(const uint8_t* data, size_t size, const std::string& path, PngSize expect, spng_ihdr* ihdr) {
  Ctx ctx(spng_ctx_new(0));
  if (!ctx) throw Error(ErrorKind::memory, "libspng: cannot allocate a decoder for " + path);
  spng_set_crc_action(ctx.get(), SPNG_CRC_ERROR, SPNG_CRC_ERROR);
  // libspng refuses larger headers itself, and bounds what ancillary chunks
  // (text, ICC profiles) may make it allocate.
  spng_set_image_limits(ctx.get(), kMaxPngSide, kMaxPngSide);
  spng_set_chunk_limits(ctx.get(), 1u << 24, 1u << 26);
  if (int rc = spng_set_png_buffer(ctx.get(), data, size)) fail(path, spng_strerror(rc));
  // The header alone, without limits, to name the size in the message.
  if (size >= 24 && std::memcmp(data + 12, "IHDR", 4) == 0) {
    const auto be32 = [&](size_t at) {
      return (uint32_t{data[at]} << 24) | (uint32_t{data[at + 1]} << 16) | (uint32_t{data[at + 2]} << 8) | data[at + 3];
    };
    const uint32_t w = be32(16), h = be32(20);
    if (w > static_cast<uint32_t>(kMaxPngSide) || h > static_cast<uint32_t>(kMaxPngSide))
      fail(path, "its header says " + std::to_string(w) + "x" + std::to_string(h) + " pixels, more than the " +
                     std::to_string(kMaxPngSide) + " per side lrahost decodes");
  }
  if (int rc = spng_get_ihdr(ctx.get(), ihdr)) fail(path, spng_strerror(rc));
  if (expect.width > 0 && (static_cast<int64_t>(ihdr->width) != expect.width ||
                           static_cast<int64_t>(ihdr->height) != expect.height))
    throw Error(ErrorKind::data, path + ": the image is " + std::to_string(ihdr->width) + "x" +
                                     std::to_string(ihdr->height) + ", expected " + std::to_string(expect.width) +
                                     "x" + std::to_string(expect.height));
  return ctx;
}

template <class T>
void allocate(std::vector<T>& v, size_t n, const std::string& what, const std::string& path) {
  try {
    v.resize(n);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::memory, "cannot allocate " + std::to_string(n * sizeof(T)) + " bytes for the " + what +
                                       " of " + path);
  }
}

}  // namespace

PngSize read_png_size(const uint8_t* data, size_t size, const std::string& path) {
  spng_ihdr ihdr{};
  open_checked(data, size, path, {}, &ihdr);
  return {static_cast<int>(ihdr.width), static_cast<int>(ihdr.height)};
}

GrayImage decode_png_gray(const uint8_t* data, size_t size, const std::string& path, PngSize expect) {
  spng_ihdr ihdr{};
  Ctx ctx = open_checked(data, size, path, expect, &ihdr);
  GrayImage img;
  img.width = static_cast<int>(ihdr.width);
  img.height = static_cast<int>(ihdr.height);
  const size_t n = static_cast<size_t>(img.width) * img.height;
  if (ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE && ihdr.bit_depth == 8) {
    allocate(img.pixels, n, "pixels", path);
    if (int rc = spng_decode_image(ctx.get(), img.pixels.data(), n, SPNG_FMT_G8, 0)) fail(path, spng_strerror(rc));
    return img;
  }
  // Anything else: decode to RGBA8 and reduce as tf.image.rgb_to_grayscale does.
  std::vector<uint8_t> rgba;
  allocate(rgba, n * 4, "RGBA pixels", path);
  if (int rc = spng_decode_image(ctx.get(), rgba.data(), rgba.size(), SPNG_FMT_RGBA8, SPNG_DECODE_TRNS))
    fail(path, spng_strerror(rc));
  allocate(img.pixels, n, "pixels", path);
  for (size_t i = 0; i < n; ++i) {
    const float g = 0.2989f * rgba[4 * i] / 255.0f + 0.5870f * rgba[4 * i + 1] / 255.0f +
                    0.1140f * rgba[4 * i + 2] / 255.0f;
    img.pixels[i] = static_cast<uint8_t>(std::min(255.0f, g * 255.5f));
  }
  return img;
}

GrayImage read_png_gray(const std::string& path, PngSize expect) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::data, path + ": cannot open the image file");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) fail(path, "the file is empty");
  return decode_png_gray(bytes.data(), bytes.size(), path, expect);
}

std::vector<uint8_t> encode_png_gray(const GrayImage& img, int level) {
  Ctx ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (!ctx) throw Error(ErrorKind::internal, "libspng: out of memory");
  spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
  spng_set_option(ctx.get(), SPNG_IMG_COMPRESSION_LEVEL, level);
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(img.width);
  ihdr.height = static_cast<uint32_t>(img.height);
  ihdr.bit_depth = 8;
  ihdr.color_type = SPNG_COLOR_TYPE_GRAYSCALE;
  spng_set_ihdr(ctx.get(), &ihdr);
  if (int rc = spng_encode_image(ctx.get(), img.pixels.data(), img.pixels.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE))
    throw Error(ErrorKind::internal, std::string("libspng: cannot encode image: ") + spng_strerror(rc));
  size_t len = 0;
  int err = 0;
  void* buf = spng_get_png_buffer(ctx.get(), &len, &err);
  if (!buf) throw Error(ErrorKind::internal, std::string("libspng: no output buffer: ") + spng_strerror(err));
  std::vector<uint8_t> out(static_cast<uint8_t*>(buf), static_cast<uint8_t*>(buf) + len);
  std::free(buf);
  return out;
}

void write_png_gray(const std::string& path, const GrayImage& img, int level) {
  const auto bytes = encode_png_gray(img, level);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error(ErrorKind::data, path + ": cannot create the image file");
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) throw Error(ErrorKind::data, path + ": write failed (disk full?)");
}

}  // namespace lra::tasks
