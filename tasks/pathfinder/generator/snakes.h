// Growing snakes (chains of paddles) on a Board: seeds, one-paddle
// extensions with continuity-weighted sampling, the two target snakes and the
// distractor snakes, in the order and with the retry rules of the reference
// (snakes.py / snakes2.py; docs/data.md, "The generator: faithfulness and speed").
#pragma once

#include <cstdint>
#include <vector>

#include "board.h"
#include "generator.h"
#include "paddle_kit.h"
#include "rng.h"

namespace lra::pathfinder {

// A paddle accepted into the picture; dashes are rendered only once the
// snake that owns them is kept, because failed snakes are thrown away whole.
struct Paddle {
  const Stamp* stamp = nullptr;
  int y = 0, x = 0;  // start point (patch centre)
  double contrast = 1.0;
};

struct Point {
  int y = 0, x = 0;
};

// Per-thread working memory, reused from image to image.
struct Workspace {
  Board board;
  std::vector<Paddle> paddles;
  std::vector<double> cmf;
  std::vector<int> candidates;
};

// Free tails of the first target seed for each integer-degree orientation.
// That seed always meets the same board (the padding border plus a band of
// 2*seed_distance), so its paddle-shaped dilation is computed once per
// configuration instead of once per attempt; pair attempts are many at 128x128.
struct FirstSeedTable {
  std::vector<std::vector<uint32_t>> tails;  // [degrees + 180] -> y * window + x, row-major
};
FirstSeedTable first_seed_table(const GeneratorConfig& cfg, const PaddleKit& kit);

struct TargetTips {
  Point origin[2];    // seed tails
  Point terminal[2];  // sampled end point of each snake's last paddle
};

// Grows the two target snakes from a fresh board (border only), restarting
// from scratch until a pair succeeds. Their paddles are appended to
// ws->paddles; ws->board holds the occupancy the distractors see.
TargetTips grow_target_pair(const GeneratorConfig& cfg, const PaddleKit& kit, const FirstSeedTable& first_seeds,
                            Rng& rng, Workspace* ws);

// Adds config.num_distractors distractor snakes (5 attempts each; a snake that
// keeps failing is skipped).
void grow_distractors(const GeneratorConfig& cfg, const PaddleKit& kit, Rng& rng, Workspace* ws);

}  // namespace lra::pathfinder
