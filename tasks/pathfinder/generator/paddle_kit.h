// Everything about one paddle geometry (length, thickness, margin,
// anti-alias scale) in one window that does not depend on the image being
// drawn, computed once: the reference redraws and resamples a paddle at high
// resolution for every attempt, but a paddle only ever depends on where its
// high-resolution end point lands, and that takes few values (seed paddles
// use integer degrees, extensions one of the candidate points on the circle).
// The same finiteness makes the continuity weights and pivot steps tables.
// Reference: the original snakes2 code; parameters in docs/data.md
// ("Pathfinder and Path-X").
#pragma once

#include <cstdint>
#include <vector>

#include "raster.h"

namespace lra::pathfinder {

struct Tap {
  int16_t dy = 0, dx = 0;  // from the paddle's start point (the patch centre)
  int32_t lin = 0;         // dy * window + dx, for patches away from the edges
  uint8_t q = 0;           // 8-bit value after the Lanczos resize
};

// One paddle drawn from the patch centre in a fixed direction, as the sparse
// non-zero pixels of its two (2h+1)^2 patches.
struct Stamp {
  std::vector<Tap> dash;  // anti-aliased dash (value q/255 before contrast)
  std::vector<Tap> mask;  // exclusion mask: the line dilated by a disk of margin*aa, resized
};

struct PaddleGeometry {
  int window = 32;
  int length = 2;
  double thickness = 0.5;
  int margin = 1;
  int antialias = 2;
  double continuity = 1.0;
};

class PaddleKit {
 public:
  // Throws lra::Error(usage) when thickness * aa is not an integer (the
  // reference raises there too) or the geometry is degenerate.
  explicit PaddleKit(const PaddleGeometry& g);

  // A direction a snake end can have: seed paddles point at integer degrees
  // (heading = degrees + 180, 0..359); after an extension a snake points at
  // the candidate it took (heading = kSeedHeadings + candidate index).
  static constexpr int kSeedHeadings = 360;

  struct Seed {
    double theta = 0;  // radians
    const Stamp* stamp = nullptr;
    std::vector<Offset> shape;  // seed dilation element as offsets (see Board::free_tails)
  };
  struct Candidate {
    int dy = 0, dx = 0;            // from the pivot, truncated like the reference
    double phi = 0;                // atan2(dy, dx)
    const Stamp* stamp = nullptr;  // the paddle drawn from the candidate back to the pivot
  };
  struct Step {
    double dy = 0, dx = 0;  // (L + 2m) * (sin, cos) of a heading: pivot to next pivot
  };

  const Seed& seed(int degrees) const { return seeds_[degrees + 180]; }  // degrees in [-180, 179]
  // Candidate end points on the circle of radius length + margin, unique, in
  // lexicographic (dy, dx) order like the reference's np.unique.
  const std::vector<Candidate>& circle() const { return circle_; }
  // max(cos(min(turn * continuity, pi/2)), 0)^2 for a heading and a candidate;
  // 0 past the limit, where the reference's cos(pi/2)^2 ~ 4e-33 changes no draw.
  double turn_weight(int heading, int candidate) const {
    return turn_weights_[static_cast<size_t>(heading) * circle_.size() + candidate];
  }
  const Step& step(int heading) const { return steps_[heading]; }
  const std::vector<Offset>& margin_disk() const { return margin_disk_; }
  const std::vector<int32_t>& margin_disk_lin() const { return margin_disk_lin_; }

  // The float32 value the reference stores for an 8-bit mask sample, and
  // whether it counts as occupied (value > 0.3).
  float mask_value(uint8_t q) const { return mask_value_[q]; }
  bool occupies(uint8_t q) const { return occupies_[q]; }

  int window() const { return window_; }
  int length() const { return length_; }
  int margin() const { return margin_; }
  int half() const { return half_; }  // stamp taps lie within +-half of the start point

 private:
  const Stamp* stamp_toward(double theta);

  int window_, length_, margin_, aa_, half_, patch_, canvas_, centre_, width_;
  LanczosAxis axis_;
  std::vector<Offset> wide_disk_;
  std::vector<Stamp> stamps_;  // indexed by high-resolution end point
  std::vector<int8_t> built_;
  std::vector<Seed> seeds_;
  std::vector<Candidate> circle_;
  std::vector<double> turn_weights_;
  std::vector<Step> steps_;
  std::vector<Offset> margin_disk_;
  std::vector<int32_t> margin_disk_lin_;
  float mask_value_[256];
  bool occupies_[256];
};

}  // namespace lra::pathfinder
