// A Python mixer's recorded sources (result.json plugin.source, written by
// plugins/python_mixer.cpp) against the files they name: where they are (the
// folder of plugin.file, "DIR/FILE.py:CLASS"), which relative names may be
// read or packed into a bundle, and whether the files there are the recorded
// ones. Shared by verify (changed sources fail it), submit (packs them) and
// the bundle reader (checks them against the result).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lra::host {

struct RecordedPythonSources {
  std::filesystem::path folder;              // plugin.file's folder (absolute), or the run's copy (below)
  std::string file;                          // the class's file, relative to `folder`
  std::string cls;                           // the class (the plugin's name)
  std::map<std::string, std::string> files;  // plugin.source.files: relative path -> SHA-256 (lowercase hex)
  // judged_python_sources: `folder` is the run's own copy, and this the
  // working folder plugin.file names (compared for information only).
  bool copy = false;
  std::filesystem::path working_folder;
};

// A run keeps a copy of the Python sources it ran, beside its result.json
// (since issue 48), so that editing the working file later changes nothing
// about the run: verify, submit and span judge it by that copy.
inline constexpr const char* kRunSourceCopyDir = "plugin-source";

// The sources a result file is judged by: the run's copy in
// RESULT_DIR/plugin-source when its class file is there, else plugin.file's
// folder (results written before runs kept a copy, or moved without it).
std::optional<RecordedPythonSources> judged_python_sources(const nlohmann::json& result,
                                                           const std::filesystem::path& result_file);

// Copies the recorded sources of a loaded Python mixer (`plugin_file` =
// "DIR/FILE.py:CLASS", `source` = its plugin.source) into
// RUN_DIR/plugin-source, each checked against its recorded SHA-256 after the
// copy. A file changed since the mixer was loaded is lra::Error(plugin)
// naming it (start the run again); a copy already there and intact (a
// resumed run) is kept.
void copy_python_sources(const std::string& plugin_file, const nlohmann::json& source,
                         const std::filesystem::path& run_dir);

// The sources `result` records; nullopt for a compiled plugin's result (no
// plugin.source) and for one whose plugin.source or plugin.file cannot be used
// (verify's field checks say why). Every path it returns is relative and
// stays inside `folder` (is_relative_inside).
std::optional<RecordedPythonSources> recorded_python_sources(const nlohmann::json& result);

// "DIR/FILE.py:CLASS" split at its last ':'; nullopt unless both parts are there.
std::optional<std::pair<std::string, std::string>> split_python_spec(const std::string& spec);

// Whether `rel` names a file inside its folder: relative, no empty, "." or
// ".." component, no NUL. What the host writes always is (the bridge lists
// files below the class's folder); a forged name must not reach /etc or /dev.
bool is_relative_inside(const std::string& rel);

// Whether `rel` may name a file of a source folder in a submission bundle (a
// Python mixer's, a compiled mixer's): inside its folder, at most
// kMaxBundlePythonDepth components of [A-Za-z0-9_-][A-Za-z0-9._-]*, at most
// kMaxBundlePythonPathBytes in all. Stricter than what a run records: the
// verifier extracts these names onto its disk.
inline constexpr std::size_t kMaxBundlePythonDepth = 8;
inline constexpr std::size_t kMaxBundlePythonPathBytes = 200;
bool is_bundle_safe_path(const std::string& rel);
// is_bundle_safe_path and a .py file.
bool is_bundle_python_path(const std::string& rel);

// A recorded file that is not there as recorded.
struct SourceFileDifference {
  std::string file;      // relative to the folder
  std::string recorded;  // its recorded SHA-256
  std::string found;     // its SHA-256 now; "" when missing or not a regular file
};

// Hashes each recorded file under `s.folder`; returns those that differ.
std::vector<SourceFileDifference> differing_python_sources(const RecordedPythonSources& s);

}  // namespace lra::host
