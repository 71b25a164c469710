// Reader of the CIFAR-10 binary release (cifar-10-binary.tar.gz) for the LRA
// Image task: each 32x32 RGB image becomes 1024 grayscale tokens, row-major.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "lra/task.h"

namespace lra::image {

inline constexpr int64_t kPixels = 1024;            // 32 x 32
inline constexpr int64_t kRecordBytes = 1 + 3 * kPixels;  // label, then R, G, B planes
inline constexpr int64_t kVocabSize = 256;          // the gray value; 0 is black (masked only by model.padding_mask = "nonzero_tokens")
inline constexpr int64_t kNumClasses = 10;
inline constexpr int64_t kFullTrain = 50000, kFullTest = 10000;
inline constexpr int64_t kRecordsPerBatch = 10000;  // records in one full batch file

inline constexpr const char* kDownloadHint =
    "download cifar-10-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html and unpack it into the data "
    "root (tar xzf cifar-10-binary.tar.gz -C ROOT) so that ROOT/cifar-10-batches-bin/data_batch_1.bin exists, or "
    "point --data-dir at the folder holding cifar-10-batches-bin";

// data_batch_1.bin .. data_batch_5.bin, then test_batch.bin.
std::vector<std::string> file_names();

// LRA's grayscale: tf.image.rgb_to_grayscale on uint8 in float32 --
// x = float(c) * float32(1/255) (convert_image_dtype), y = 0.2989*R + 0.5870*G
// + 0.1140*B summed left to right without fused multiply-add, then
// trunc(y * 255.5) (convert_image_dtype back to uint8), clamped to 0..255.
uint8_t to_gray(uint8_t r, uint8_t g, uint8_t b);

// ROOT/cifar-10-batches-bin, else ROOT itself, whichever first holds any of the
// six files. Throws lra::Error(data) listing the folders looked at, or naming
// the missing files of an incomplete folder.
std::filesystem::path find_cifar_dir(const std::filesystem::path& root);

// Records in a batch file from its size. Throws lra::Error(data) naming the
// file and its size when that is not a positive multiple of 3073 bytes.
int64_t record_count(const std::string& path);

struct LoadOptions {
  int64_t train_examples = 0;  // 0: all
  int64_t eval_examples = 0;   // 0: all; caps validation and test
  uint64_t seed = 0;           // chooses the capped subsets (lra::tasks::choose_subset)
  int threads = 1;
};

// train = the first floor(90%) records of data_batch_1..5 in file order
// (45,000 of 50,000), validation = the rest (5,000), test = test_batch.bin.
// Every record is validated (label byte 0-9). Fills info and a source line.
Dataset load_cifar(const std::filesystem::path& root, const LoadOptions& options);

}  // namespace lra::image
