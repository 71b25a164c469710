// Raster primitives of the reference generator, reproduced at the level that
// decides pixel values: Pillow's line rasteriser, OpenCV-style disk dilation,
// Pillow's 8-bit Lanczos-3 resize (as SciPy's imresize calls it) and SciPy's
// bytescale. Reference: the original snakes2 code (docs/data.md, "The
// generator: faithfulness and speed").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lra::pathfinder {

struct Offset {
  int dy = 0, dx = 0;
};

// All integer offsets with dy^2 + dx^2 <= r^2 (the reference's disk element).
std::vector<Offset> disk_offsets(int r);

// Draws a line of value 255 into an 8-bit canvas (w x h, row-major) the way
// Pillow's ImageDraw.line does: width <= 1 is Bresenham including both ends;
// wider lines are the filled 4-corner polygon of Pillow's wide-line code.
void draw_line(uint8_t* canvas, int w, int h, int x0, int y0, int x1, int y1, int width);

// dst = max filter of src over `element` (out-of-canvas pixels are ignored,
// as OpenCV's dilate does). dst must not alias src.
void dilate(const uint8_t* src, int w, int h, const std::vector<Offset>& element, uint8_t* dst);

// One axis of Pillow's Lanczos-3 resampling: the support widens with the
// downscale factor, weights are normalised per output pixel and then turned
// into 22-bit fixed point, as Pillow does for 8-bit images.
struct LanczosAxis {
  int in_size = 0, out_size = 0, ksize = 0;
  std::vector<int> first;  // first input pixel of each output pixel
  std::vector<int> count;  // taps of each output pixel
  std::vector<int32_t> k;  // out_size * ksize weights
};
LanczosAxis lanczos_axis(int in_size, int out_size);

// Resizes a mostly-empty 8-bit canvas (ay.in_size x ax.in_size) to
// ay.out_size x ax.out_size with Pillow's two passes (horizontal, then
// vertical, 8-bit clipping in between). Only the window of `win_h` x `win_w`
// pixels at (y0, x0) may be non-zero; `win` holds it row-major. Result pixels
// are max-merged into `out`, and only those the window can reach are touched,
// which is what makes stamps and markers cheap.
void resize_window_max(const uint8_t* win, int y0, int x0, int win_h, int win_w, const LanczosAxis& ay,
                       const LanczosAxis& ax, uint8_t* out, std::vector<uint8_t>* scratch);

// A marker: hard disk of radius `radius * aa` centred on (cy*aa, cx*aa) of an
// (h*aa x w*aa) canvas, resized to h x w (SciPy's imresize: bytescale of the
// 0/1 canvas to 0/255, then Lanczos). Max-merged into `out` (h x w).
// `ay`/`ax` must be lanczos_axis(h*aa, h) / lanczos_axis(w*aa, w).
void draw_marker(int h, int w, int aa, int cy, int cx, double radius, const LanczosAxis& ay, const LanczosAxis& ax,
                 uint8_t* out, std::vector<uint8_t>* scratch);

// SciPy's bytescale: (x - min) * 255 / (max - min), clipped to [0, 255], + 0.5,
// truncated (a constant image divides by 1).
void bytescale(const double* data, size_t n, uint8_t* out);

}  // namespace lra::pathfinder
