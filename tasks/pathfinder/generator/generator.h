// The Pathfinder / Path-X image generator (Kim et al. 2020 "snakes2", as used
// by LRA), reimplemented natively. Facts: docs/data.md ("Pathfinder and
// Path-X", "The generator: faithfulness and speed").
//
// Contract used by the task plugins (tasks/pathfinder/pathfinder_task.cpp):
//   * lra_config() gives LRA's parameters for a resolution and difficulty;
//   * generate_image() is a pure function of (config, seed, index), so a
//     dataset is deterministic per seed and independent of the thread count;
//   * write_release() writes the LRA release layout that the loader (and any
//     other LRA code) reads.
// Torch-free.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "png_io.h"

namespace lra::pathfinder {

// How many distractor snakes the contour-length-9/14 sets get (docs/data.md,
// "The open ambiguity: how many distractor snakes").
enum class DistractorReading {
  from_baseline,  // (a) count computed once from the baseline distractor length 2
  from_contour,   // (b) count computed from this set's own distractor length (default)
};

struct GeneratorConfig {
  int window = 32;                      // output image is window x window
  int padding = 1;                      // px border marked occupied
  int antialias = 2;                    // drawing scale before Lanczos downsampling
  std::vector<int> margins{1};          // paddle margin, drawn per image
  int paddle_length = 2;
  double paddle_thickness = 0.5;
  double seed_distance = 7;
  double marker_radius = 1.5;
  double continuity = 1.0;
  std::vector<double> snake_contrasts{2.0};
  std::vector<double> paddle_contrasts{0.75};
  int contour_length = 14;              // paddles per target snake
  int distractor_length = 4;            // paddles per distractor snake
  double num_distractors = 5;           // fractional requests round up (17.5 -> 18 snakes)
  int paddle_retrials = 2;
  int distractor_retrials = 4;
  // Metadata column 6 as a float ("2.0"), as in the released Path-X rows.
  bool float_distractor_length = false;
};

// Throws lra::Error(usage) naming the first parameter the generator cannot use.
void validate(const GeneratorConfig& config);

// LRA's parameters: resolution 32 (Pathfinder) or 128 (Path-X); contour
// length 6 (curv_baseline), 9 or 14. Throws lra::Error(usage) otherwise.
GeneratorConfig lra_config(int resolution, int contour_length,
                           DistractorReading reading = DistractorReading::from_contour);

// "curv_baseline", "curv_contour_length_9" or "curv_contour_length_14".
std::string difficulty_dir(int contour_length);

struct Sample {
  lra::tasks::GrayImage image;  // bytescaled: background 0, brightest pixel 255
  int label = 0;                // 1 = the two markers are on the same snake
  int margin = 0;               // the paddle margin drawn for this image
};

// One image; a pure function of its arguments.
Sample generate_image(const GeneratorConfig& config, uint64_t seed, uint64_t index);

// The metadata row the release stores for one image (docs/data.md), e.g.
// "imgs/0 sample_0.png 0 0 1.0 14 4 2 0.5 1 1".
std::string metadata_row(const GeneratorConfig& config, int64_t batch, int64_t index, const Sample& s);

// Writes `total` images into dataset_dir (e.g. ROOT/pathfinder32/curv_contour_length_14):
// imgs/<b>/sample_<i>.png and metadata/<b>.npy (text rows), `per_batch` images per
// batch (the last batch may be short). Image k is generate_image(config, seed, k).
// `threads` workers; output identical for any thread count. `progress`, when
// set, is called now and then with the number of images done.
void write_release(const std::string& dataset_dir, const GeneratorConfig& config, int64_t total,
                   int64_t per_batch, uint64_t seed, int threads,
                   const std::function<void(int64_t)>& progress = {});

}  // namespace lra::pathfinder
