// Pathfinder / Path-X release reader (torch-free; target lra_pathfinder_data):
// metadata parsing, PNG decoding, the split rule and the folder lookup shared
// by the "pathfinder" (32x32) and "pathx" (128x128) task plugins.
// Facts: docs/data.md, "Pathfinder and Path-X" (layout, lookup, split rule).
//
// A dataset folder (e.g. ROOT/pathfinder32/curv_contour_length_14) holds
// imgs/<b>/sample_<i>.png and metadata/<b>.npy. Despite the extension the
// metadata files are text: one row per line, fields separated by single
// spaces; col 0 = imgs/<b>, col 1 = sample_<i>.png, col 3 = label (1 =
// connected). Image path = <folder>/<col0>/<col1>.
//
// Split rule (LRA sliced the single TFDS split hard[:80%] / hard[80%:90%] /
// hard[90%:] in build order; that order is defined nowhere else):
//   1. metadata files are taken in numeric batch order (0.npy, 1.npy, ...,
//      10.npy), rows in file order; files whose name is not <digits>.npy
//      (e.g. combine_metadata.py's combined.npy) are ignored and reported;
//   2. zero-byte image files are dropped (LRA filters them; the release has
//      one, pathfinder32/curv_baseline/imgs/0/sample_172.png);
//   3. of the N images left, the first floor(0.8 N) are train, the next
//      floor(0.1 N) validation, the rest test (200,000 -> 160,000 / 20,000 / 20,000).
// Tokens are the pixel values 0-255, row-major (pixel 0 is a real token).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lra/task.h"

namespace lra::pathfinder {

struct SplitSizes {
  int64_t train = 0, val = 0, test = 0;
};
// The rule above, step 3.
SplitSizes split_sizes(int64_t n);

// One metadata row, resolved.
struct ImageRef {
  std::string path;   // <folder>/<col0>/<col1>
  int32_t label = 0;  // col 3
  std::string where;  // "<metadata file>:<line>", for messages
  int contour_length = -1;  // col 5, paddles per target snake; -1 when the row has no such column
};

struct MetadataFile {
  int64_t batch = 0;
  std::string path;
};

// The numbered metadata files of `dataset_dir`/metadata in batch order.
// Throws lra::Error(data) when the folder or every numbered file is missing.
// Other files are appended to `ignored` (full paths) when given.
std::vector<MetadataFile> list_metadata(const std::string& dataset_dir, std::vector<std::string>* ignored = nullptr);

// Parses the text of one metadata file; `file` names it in errors
// (lra::Error(data), "FILE:LINE"). Blank lines are skipped; a trailing '\r' is
// dropped. Rows are appended to `out`.
void parse_metadata(const std::string& text, const std::string& file, const std::string& dataset_dir,
                    std::vector<ImageRef>* out);

// All rows of a dataset folder, in the order of the split rule.
std::vector<ImageRef> read_metadata(const std::string& dataset_dir, std::vector<std::string>* ignored = nullptr);

struct ReadReport {
  int64_t rows = 0;         // metadata rows (images listed)
  int64_t empty = 0;        // zero-byte image files skipped
  std::string first_empty;  // path of the first one
  std::vector<std::string> ignored_files;  // metadata/ entries that are not <digits>.npy
  // Rows by the contour length their metadata record (col 5; -1: none): the
  // release's three sets share one layout, and only this tells them apart.
  std::map<int, int64_t> contour_lengths;
  std::string first_row_of_each;  // "6 at <file>:<line>, 14 at ...": where each length first appears
};

// Reads a dataset folder into the three splits (rule above). Every image must
// be a PNG of resolution x resolution pixels. Decodes with `threads` workers;
// the result does not depend on the thread count.
void read_dataset(const std::string& dataset_dir, int resolution, int threads, Split* train, Split* val,
                  Split* test, ReadReport* report);

// True when `dataset_dir`/metadata is a folder (the dataset is there, complete or not).
bool dataset_present(const std::string& dataset_dir);

// "pathfinder32" or "pathfinder128".
std::string resolution_folder(int resolution);

// Where the LRA release may hold a dataset folder below `root`, in order of
// preference. 32: ROOT/pathfinder32, ROOT/lra_release/pathfinder32,
// ROOT/lra_release/lra_release/pathfinder32. 128: the deepest first, so that of
// the release's two pathfinder128 copies the inner lra_release/lra_release one
// wins whether ROOT is the extraction folder or the outer lra_release folder:
// ROOT/lra_release/lra_release/pathfinder128, ROOT/lra_release/pathfinder128,
// ROOT/pathfinder128. Each followed by /<difficulty>.
std::vector<std::string> release_candidates(const std::string& root, int resolution, const std::string& difficulty);

// Makes `final_dir` appear complete or not at all: unless it exists already,
// calls write(staging) for a fresh sibling folder `final_dir`.tmp-<pid>-<n>,
// then renames it to `final_dir`. The staging folder is removed on failure.
// A lost race with a parallel writer keeps the other's folder.
void publish_folder(const std::string& final_dir, const std::function<void(const std::string& staging)>& write);

}  // namespace lra::pathfinder
