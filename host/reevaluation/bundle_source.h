// A compiled mixer's source in a submission bundle (reevaluation/bundle.h):
//   sources/<sha256>/<relative path>    the folder that builds plugins/<sha256>.so
// <sha256> is the submitted .so's, whose run(s) the folder belongs to; it
// holds CMakeLists.txt at its top and builds one plugin against the installed
// SDK (find_package(LraSdk), lra_add_plugin). verify --reevaluate builds it in
// the sandbox and runs what it built, not the submitted binary
// (reevaluation/source_build.h; the rule: reevaluation/judged_code.h).
// Only text files of a source tree travel: CMakeLists.txt and names ending in
// one of kSourceExtensions, each without a NUL byte, within the limits below.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace lra::host {

inline constexpr int64_t kMaxSourceFileBytes = 2ll << 20;   // one file
inline constexpr int64_t kMaxSourceFolderBytes = 16ll << 20;  // one folder, all files
inline constexpr size_t kMaxSourceFiles = 256;                // one folder
inline constexpr const char* kSourceExtensions[] = {".cpp", ".cc", ".cxx", ".c",   ".h",     ".hpp", ".hh",
                                                     ".hxx", ".inl", ".inc", ".ipp", ".cu",    ".cuh", ".cmake",
                                                     ".txt", ".md",  ".in"};

// sources/<sha256> of the compiled plugin plugins/<sha256>.so.
std::string bundle_source_folder(const std::string& so_sha256);

// Whether `rel` (relative to a source folder) is a file a bundle carries:
// a bundle-safe path (common/python_source_files.h) that is CMakeLists.txt
// or ends in one of kSourceExtensions.
bool is_bundle_source_path(const std::string& rel);

// Whether `name` is sources/<64 lowercase hex>/<is_bundle_source_path>.
bool is_bundle_source_entry(const std::string& name);

// What submit packs from a source folder.
struct SourcePack {
  struct File {
    std::string entry;  // sources/<sha256>/<relative path>
    std::filesystem::path source;
    std::string sha256;
  };
  std::vector<File> files;
  std::vector<std::string> skipped;  // relative paths left out: not source, hidden, or in a build tree
};

// Walks `dir` for the source of plugins/<so_sha256>.so. Hidden names and
// folders holding a CMakeCache.txt (a build tree) are skipped, as is any file
// that is not a source file by name. Throws lra::Error(usage) naming `dir` and
// the file when the folder has no CMakeLists.txt at its top, a source file has
// a name a bundle cannot carry or a NUL byte (not text), or the limits above
// are passed.
SourcePack source_pack(const std::filesystem::path& dir, const std::string& so_sha256);

// One SHA-256 for a whole source folder: over its {relative path: sha256}
// map as compact sorted JSON, as a Python mixer's plugin.sha256 is made.
std::string source_folder_sha256(const std::map<std::string, std::string>& files);

}  // namespace lra::host
