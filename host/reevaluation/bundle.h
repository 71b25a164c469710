// A submission bundle: one tar file that carries everything a maintainer
// needs to check a submission without trusting the submitter — each run's
// result.json and final model.pt, and the mixer plugin .so they name.
//
// Layout (names are the only ones a reader accepts):
//   bundle.json                   index: schema lrahost.bundle/v1, the runs, every file with its SHA-256
//                                 ("files") and size in bytes ("sizes"); always the first entry
//   runs/<run>/result.json        <run>: [A-Za-z0-9._-]{1,80}, not starting with '.'
//   runs/<run>/model.pt
//   runs/<run>/pretraining/encoder.pt   a self-pretrained run's pretrained weights (its runs[]
//                                 entry has "pretrained": true; docs/rules.md "Self-pretraining")
//   runs/<run>/pretraining/fine-tuning-start.pt   its weights after the fine-tuning's first updates
//                                 ("fine_tuning_start": true), which the verifier replays from encoder.pt
//   plugins/<sha256>.so           named by the SHA-256 of its bytes
//   plugins/<sha256>/<path>.py    a Python mixer's sources, the folder named by the result's
//                                 plugin.sha256 (reevaluation/bundle_python.h); checked against
//                                 the result's plugin.source.files once extracted
//   sources/<sha256>/<path>       a compiled mixer's source, the folder that builds plugins/<sha256>.so
//                                 (reevaluation/bundle_source.h): CMakeLists.txt at its top, text only
// Reading is defensive: bundle.json is read first and bounds everything else
// before anything is written (at most 1,000 entries, a size limit per kind of
// file, 64 GiB in all, no run folder or run listed twice); then regular files
// only (no links, devices, folders from the archive), no duplicate names, each
// of the size and SHA-256 the index lists, counted as it is read. Everything
// lands in a folder beside the destination that becomes it only when every
// check passed: a refused bundle leaves nothing behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lra::host {

inline constexpr const char* kBundleSchema = "lrahost.bundle/v1";
inline constexpr const char* kBundleIndexName = "bundle.json";

// A file to pack: its name inside the bundle and where its bytes are now.
struct BundleFile {
  std::string name;
  std::filesystem::path source;
};

// Writes `index` as bundle.json followed by `files` into a tar at `out`,
// atomically (a temporary file beside it, renamed when complete). Throws
// lra::Error(storage) when it cannot be written, Error(usage) when `out` exists.
void write_bundle(const std::filesystem::path& out, const nlohmann::json& index, const std::vector<BundleFile>& files);

// Unpacks `bundle` into `dest` (must not exist or be an empty folder, which is
// replaced) and returns the parsed index, after checking every name, type and
// size, that the files are exactly those of the runs the index lists, that each
// has the listed size and SHA-256, that each Python mixer's folder holds
// exactly the sources its runs' results record, and that no run is there
// twice (repeated_run).
// Throws lra::Error(data) naming the bundle and the entry for anything else,
// Error(storage) when the files do not fit on the disk; `dest` is then as it was.
nlohmann::json extract_bundle(const std::filesystem::path& bundle, const std::filesystem::path& dest);

// Why `results` (a name for messages, a parsed result.json) hold one run twice:
// the same result digest under two names, or two results the leaderboard
// counts as the same seed of one entry on one task (leaderboard/scores.h
// aggregate_scores, the one rule for "the same run"); the reason names both.
// Results the leaderboard cannot read are left for verify to report.
std::optional<std::string> repeated_run(const std::vector<std::pair<std::string, nlohmann::json>>& results);

// Whether `name` is one a bundle may hold (exposed for tests).
bool is_allowed_bundle_name(const std::string& name);

}  // namespace lra::host
