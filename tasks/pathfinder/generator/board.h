// The occupancy ("mask") image that snakes grow on: exclusion masks merged by
// maximum, the queries the growth rules make of it, and an undo journal so a
// failed distractor snake can be taken back without copying the image.
// Reference: the original snakes2 code (docs/data.md, "The generator:
// faithfulness and speed").
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "paddle_kit.h"

namespace lra::pathfinder {

class Board {
 public:
  // Clears to a `padding`-px border of value 1 (occupied).
  void reset(int height, int width, int padding);

  int height() const { return h_; }
  int width() const { return w_; }
  bool inside(int y, int x) const { return y >= 0 && y < h_ && x >= 0 && x < w_; }

  // max(occupancy + mask of `s` placed at (y, x)) < 1.8: no overlap.
  bool fits(const Stamp& s, int y, int x, const PaddleKit& kit) const;
  // occupancy = max(occupancy, mask of `s` at (y, x)); journaled.
  void merge(const Stamp& s, int y, int x, const PaddleKit& kit);
  // The occupancy dilated by the kit's margin disk, evaluated at one pixel only.
  double dilated_at(int y, int x, const PaddleKit& kit) const;

  size_t mark() const { return journal_.size(); }
  void rollback(size_t mark);
  void forget() { journal_.clear(); }

  // Pixels not occupied (value <= 0.3).
  int64_t free_pixels() const;
  // Every free tail of the last free_tails call, as y * width + x, row-major.
  void list_tails(std::vector<uint32_t>* out) const;
  // Seed tails: pixels p such that no occupied pixel, counting a band of
  // `band` px along every edge as occupied, lies at p + o for o in `shape`
  // (OpenCV's dilation by the paddle-shaped element). Returns their count,
  // 0 when the element leaves some pixel with no image pixel at all (see .cpp);
  // nth_tail then gives the n-th in row-major order (np.nonzero's order).
  int64_t free_tails(const std::vector<Offset>& shape, int band);
  std::pair<int, int> nth_tail(int64_t n) const;

 private:
  bool reaches_every_pixel(const std::vector<Offset>& shape);
  // Whether a patch of +-half around (y, x) lies inside (no clipping needed)
  // and the kit's linear offsets match this board.
  bool interior(int y, int x, int half, const PaddleKit& kit) const {
    return y >= half && y < h_ - half && x >= half && x < w_ - half && kit.window() == w_;
  }
  void set_bit(std::vector<uint64_t>& bits, int y, int x) {
    bits[static_cast<size_t>(y) * words_ + (x >> 6)] |= uint64_t{1} << (x & 63);
  }

  int h_ = 0, w_ = 0, words_ = 0;
  std::vector<float> occ_;          // float32 values, like the reference's masks
  std::vector<uint64_t> occupied_;  // occ_ > 0.3, one bit per pixel, rows of words_ words
  std::vector<uint64_t> lined_, free_;
  std::vector<std::pair<int32_t, float>> journal_;
};

}  // namespace lra::pathfinder
