// The Pathfinder (32x32, 1,024 tokens) and Path-X (128x128, 16,384 tokens)
// task plugins: one class parameterised by resolution; pathfinder_task.cpp and
// pathx_task.cpp each declare one plugin with it.
//
// load():
//   * with the LRA release configuration (images = 200000, distractors =
//     from_contour; any contour_length and seed) the release layout is looked
//     up first, see release_candidates() in pathfinder_data.h (Path-X: the
//     inner lra_release/lra_release/pathfinder128 copy is preferred; a second
//     copy is named as ignored in Dataset::source);
//   * otherwise, or when no release folder exists, the generated cache
//     ROOT/<task>/gen-<fnv1a64 of canonical params>/<pathfinderNN>/<difficulty>/,
//     generated when allowed (into a staging folder renamed into place once
//     complete), else an ErrorKind::data error listing every path looked for.
// The split rule and token layout: pathfinder_data.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "generator.h"
#include "lra/task.h"
#include "pathfinder_data.h"
#include "task_util.h"

namespace lra::pathfinder {

inline constexpr int64_t kReleaseImages = 200000;  // per difficulty in the LRA release
inline constexpr int64_t kImagesPerBatch = 1000;   // as in the release: 200 metadata files of 1,000 rows
inline constexpr int64_t kMinImages = 10;          // so that every split gets at least one example
// Written by generate() next to imgs/ and metadata/ (readers of the layout
// ignore it), so that load() does not call that folder the LRA release.
inline constexpr const char* kGeneratorMark = "lrahost_generator.txt";

struct TaskParams {
  int contour_length = 14;
  int64_t images = kReleaseImages;
  int64_t seed = 0;
  DistractorReading reading = DistractorReading::from_contour;
  std::string reading_name = "from_contour";

  bool release_config() const { return images == kReleaseImages && reading == DistractorReading::from_contour; }
};

inline std::vector<OptionSpec> task_options() {
  return {
      {"contour_length", int64_t{14}, "paddles per target snake: 6 (curv_baseline), 9 or 14 (LRA's 'hard' set)"},
      {"images", int64_t{200000}, "dataset size (split 80/10/10); 200000 with the default distractors = the LRA release"},
      {"seed", int64_t{0}, "generator seed (the LRA release files have none)"},
      {"distractors", std::string("from_contour"),
       "distractor count of the 9/14 sets: from_contour (reading b) or from_baseline (reading a)"},
  };
}

inline TaskParams read_task_params(const Params& given, const std::string& task) {
  Params params;  // defaults first, so a partial map still works
  for (const auto& s : task_options()) params[s.name] = s.default_value;
  for (const auto& [k, v] : given) params[k] = v;
  const std::string what = task + " [data]";
  ParamReader r(params, what);
  TaskParams p;
  const int64_t cl = r.get_int("contour_length");
  if (cl != 6 && cl != 9 && cl != 14)
    throw Error(ErrorKind::rules, what + ": contour_length = " + std::to_string(cl) +
                                      " is not valid (valid: 6 = curv_baseline, 9 = curv_contour_length_9, "
                                      "14 = curv_contour_length_14)");
  p.contour_length = static_cast<int>(cl);
  p.images = r.get_int("images");
  if (p.images < kMinImages)
    throw Error(ErrorKind::rules, what + ": images = " + std::to_string(p.images) + " is not valid (valid: >= " +
                                      std::to_string(kMinImages) + "; the LRA release has 200000)");
  p.seed = r.get_int("seed");
  if (p.seed < 0)
    throw Error(ErrorKind::rules, what + ": seed = " + std::to_string(p.seed) + " is not valid (valid: >= 0)");
  p.reading_name = r.get_string("distractors");
  if (p.reading_name == "from_contour")
    p.reading = DistractorReading::from_contour;
  else if (p.reading_name == "from_baseline")
    p.reading = DistractorReading::from_baseline;
  else
    throw Error(ErrorKind::rules, what + ": distractors = '" + p.reading_name +
                                      "' is not valid (valid: from_contour, from_baseline)");
  return p;
}

// Everything that determines the generated files; its hash names the cache
// folder. Bump "v1" whenever the generator's output changes.
inline std::string canonical_params(const TaskParams& p, int resolution) {
  return "lrahost pathfinder generator v1\nresolution=" + std::to_string(resolution) +
         "\ncontour_length=" + std::to_string(p.contour_length) + "\ndistractors=" + p.reading_name +
         "\nimages=" + std::to_string(p.images) + "\nper_batch=" + std::to_string(kImagesPerBatch) +
         "\nseed=" + std::to_string(p.seed) + "\n";
}

class PathfinderPlugin : public TaskPlugin {
 public:
  PathfinderPlugin(std::string name, int resolution) : name_(std::move(name)), resolution_(resolution) {}

  Status data_options(std::vector<OptionSpec>* out) const noexcept override {
    return guarded([&] { *out = task_options(); });
  }

  Status load(const DataRequest& request, Dataset* out) const noexcept override {
    return guarded([&] { load_impl(request, out); });
  }

  Status generate(const std::string& out_dir, const Params& params, int64_t total, uint64_t seed,
                  int threads) const noexcept override {
    return guarded([&] {
      namespace fs = std::filesystem;
      const TaskParams p = read_task_params(params, name_);
      const int64_t n = total <= 0 ? p.images : total;
      if (n < kMinImages)
        throw Error(ErrorKind::usage, name_ + ": the number of images must be >= " + std::to_string(kMinImages) +
                                          " (got " + std::to_string(n) + ")");
      const GeneratorConfig config = lra_config(resolution_, p.contour_length, p.reading);
      const fs::path dir = fs::path(out_dir) / resolution_folder(resolution_) / difficulty_dir(p.contour_length);
      std::error_code ec;
      if (fs::exists(dir, ec))
        throw Error(ErrorKind::usage, name_ + ": " + dir.string() + " already exists; delete it or choose another --out");
      publish_folder(dir.string(), [&](const std::string& staging) {
        write_release(staging, config, n, kImagesPerBatch, seed, std::max(threads, 1));
        TaskParams written = p;
        written.images = n;
        written.seed = static_cast<int64_t>(seed);
        std::ofstream(fs::path(staging) / kGeneratorMark) << canonical_params(written, resolution_);
      });
    });
  }

 private:
  void load_impl(const DataRequest& request, Dataset* out) const {
    namespace fs = std::filesystem;
    const TaskParams p = read_task_params(request.params, name_);
    const fs::path root = request.data_root.empty() ? fs::path(".") : fs::path(request.data_root);
    const std::string difficulty = difficulty_dir(p.contour_length);
    const std::string res_dir = resolution_folder(resolution_);
    const int threads = std::max(request.threads, 1);
    *out = Dataset{};
    out->info.vocab_size = 256;
    out->info.num_classes = 2;
    out->info.natural_len = static_cast<int64_t>(resolution_) * resolution_;
    out->info.paired = false;

    std::vector<std::string> looked;
    if (p.release_config()) {
      looked = release_candidates(root.string(), resolution_, difficulty);
      std::vector<std::string> present;
      for (const auto& c : looked)
        if (dataset_present(c)) present.push_back(c);
      if (!present.empty()) {
        const std::string& dir = present.front();
        const std::string mark = generator_mark(dir);
        std::string src = (mark.empty() ? std::string(lra::kLraReleaseSource) + " " : std::string("release layout ")) +
                          res_dir + "/" + difficulty + " at " + dir;
        if (present.size() > 1) {
          src += resolution_ == 128 ? " (the inner lra_release/lra_release copy, which third-party preprocessing "
                                      "uses; the other copy at "
                                    : " (another copy at ";
          for (size_t i = 1; i < present.size(); ++i) src += (i > 1 ? " and " : "") + present[i];
          src += resolution_ == 128 ? " was ignored: it is suspected broken, upstream LRA issue #38)"
                                    : " was ignored)";
        }
        src += mark.empty() ? "; the seed does not apply" : "; written by `lrahost data generate` (" + mark + ")";
        const ReadReport rep = read(dir, "replace the broken files with those of the LRA release", threads, out);
        if (rep.rows != kReleaseImages)
          src += "; NOT the full dataset: " + lra::tasks::with_commas(rep.rows) + " of " + lra::tasks::with_commas(kReleaseImages) + " images";
        // The release's three sets share one layout; their metadata's contour
        // length tells them apart. Images of another set under this set's
        // name are not LRA's release of it: said, and no longer taken for it
        // (the host then checks them as any other data).
        const auto& lengths = rep.contour_lengths;
        const int64_t other = rep.rows - (lengths.count(p.contour_length) ? lengths.at(p.contour_length) : 0) -
                              (lengths.count(-1) ? lengths.at(-1) : 0);
        if (mark.empty() && other > 0)
          src = res_dir + " images in LRA's release layout under " + difficulty + " that are NOT LRA's " + difficulty +
                " set: the metadata give " + lra::tasks::with_commas(other) + " of " + lra::tasks::with_commas(rep.rows) +
                " images another contour length than " + std::to_string(p.contour_length) + " (first rows: " +
                rep.first_row_of_each + ")" + src.substr(src.find(" at "));
        out->source = src + notes(rep);
        return;
      }
    }

    const fs::path gen = root / name_ / ("gen-" + lra::tasks::fnv1a64_hex(canonical_params(p, resolution_)));
    const fs::path dir = gen / res_dir / difficulty;
    looked.push_back(dir.string());
    const std::string remedy = "delete " + gen.string() + " to have it regenerated";
    if (!dataset_present(dir.string())) {
      if (!request.allow_generate) {
        std::string msg = name_ + ": no " + res_dir + " dataset for contour_length " +
                          std::to_string(p.contour_length) + ", images " + std::to_string(p.images) +
                          ", distractors " + p.reading_name + ", seed " + std::to_string(p.seed) +
                          "; looked for a folder with metadata/ and imgs/ at:";
        for (const auto& l : looked) msg += "\n  " + l;
        msg += "\nGet data with `lrahost data generate " + name_ +
               " --out DIR` (then --data-dir DIR), a training command (it generates them), or ";
        msg += p.release_config() ? "the LRA release (lra_release.gz, unpacked; --data-dir its folder)."
                                  : "the default images and distractors to use the LRA release.";
        throw Error(ErrorKind::data, msg);
      }
      const GeneratorConfig config = lra_config(resolution_, p.contour_length, p.reading);
      publish_folder(gen.string(), [&](const std::string& staging) {
        write_release((fs::path(staging) / res_dir / difficulty).string(), config, p.images, kImagesPerBatch,
                      static_cast<uint64_t>(p.seed), threads);
        std::ofstream(fs::path(staging) / "params.txt") << canonical_params(p, resolution_);
      });
    }
    const ReadReport rep = read(dir.string(), remedy, threads, out);
    if (request.enforce_sizes && rep.rows != p.images)
      throw Error(ErrorKind::data, name_ + ": " + dir.string() + " lists " + std::to_string(rep.rows) +
                                       " images, expected " + std::to_string(p.images) + "; " + remedy);
    out->source = "generated by the lrahost Pathfinder generator at " + dir.string() + " (" +
                  std::to_string(resolution_) + "x" + std::to_string(resolution_) + ", " + difficulty + ", " +
                  std::to_string(p.images) + " images, seed " + std::to_string(p.seed) + ", distractors " +
                  p.reading_name + ")" + notes(rep);
  }

  ReadReport read(const std::string& dir, const std::string& remedy, int threads, Dataset* out) const {
    ReadReport rep;
    try {
      read_dataset(dir, resolution_, threads, &out->train, &out->val, &out->test, &rep);
    } catch (const Error& e) {
      throw Error(e.kind(), std::string(e.what()) + "; " + remedy);
    }
    return rep;
  }

  // "seed S, distractors D" when `dir` was written by generate(), else "".
  static std::string generator_mark(const std::string& dir) {
    std::ifstream in(std::filesystem::path(dir) / kGeneratorMark);
    std::string line, seed, reading;
    while (std::getline(in, line)) {
      if (line.rfind("seed=", 0) == 0) seed = line.substr(5);
      if (line.rfind("distractors=", 0) == 0) reading = line.substr(12);
    }
    if (seed.empty() && reading.empty()) return "";
    return "seed " + seed + ", distractors " + reading;
  }

  static std::string notes(const ReadReport& rep) {
    std::string s;
    if (rep.empty)
      s += "; skipped " + lra::tasks::with_commas(rep.empty) + " empty image file" + (rep.empty > 1 ? "s" : "") + " (first: " +
           rep.first_empty + ")";
    if (!rep.ignored_files.empty())
      s += "; ignored " + std::to_string(rep.ignored_files.size()) + " other file" +
           (rep.ignored_files.size() > 1 ? "s" : "") + " in metadata/ (first: " + rep.ignored_files.front() + ")";
    return s;
  }

  std::string name_;
  int resolution_;
};

struct PathfinderTask final : PathfinderPlugin {
  PathfinderTask() : PathfinderPlugin("pathfinder", 32) {}
};

struct PathXTask final : PathfinderPlugin {
  PathXTask() : PathfinderPlugin("pathx", 128) {}
};

}  // namespace lra::pathfinder
