// A submission bundle: one tar file that carries everything a maintainer
// needs to check a submission without trusting the submitter — each run's
// result.json and final model.pt, and the mixer plugin .so they name.
//
// Layout (names are the only ones a reader accepts):
//   bundle.json                   index: schema lrahost.bundle/v1, every file with its SHA-256
//   runs/<run>/result.json        <run>: [A-Za-z0-9._-]{1,80}, not starting with '.'
//   runs/<run>/model.pt
//   plugins/<sha256>.so           named by the SHA-256 of its bytes
// Reading is defensive: regular files only (no links, devices, folders from
// the archive), no duplicate names, a size limit per kind of file, and every
// byte checked against the index before anything uses it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
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

// Unpacks `bundle` into `dest` (created; must not exist or be empty) and
// returns the parsed index, after checking every name, type and size, that the
// files are exactly those the index lists, and that each has the listed SHA-256.
// Throws lra::Error(data) naming the bundle and the entry for anything else.
nlohmann::json extract_bundle(const std::filesystem::path& bundle, const std::filesystem::path& dest);

// Whether `name` is one a bundle may hold (exposed for tests).
bool is_allowed_bundle_name(const std::string& name);

}  // namespace lra::host
