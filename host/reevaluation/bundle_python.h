// A Python mixer in a submission bundle (reevaluation/bundle.h). Its sources
// travel as
//   plugins/<sha256>/<relative path>     each file of the result's plugin.source.files
// where <sha256> is the result's plugin.sha256, python_sources_sha256 of that
// map, so a folder is named by its contents as a .so is by its bytes. A run of
// bundle.json names it as its "plugin" in the host's own FILE.py:CLASS form,
//   "plugins/<sha256>/<file>.py:<Class>",
// exactly what the confined `mixer-server --plugin` gets (relative to the
// bundle): one field, so every reader of runs[].plugin tells the two kinds
// apart by its form and needs no second field kept in step with it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lra::host {

// The largest source file a bundle may carry (a .py file: generous).
inline constexpr int64_t kMaxPythonSourceBytes = 8ll << 20;

// A run's Python plugin as bundle.json names it.
struct BundlePythonPlugin {
  std::string sha256;  // the folder's name: 64 lowercase hex digits
  std::string file;    // the class's file, relative to the folder
  std::string cls;     // the class
  std::string folder() const { return "plugins/" + sha256; }
  std::string entry() const { return folder() + "/" + file; }             // the class's file's entry
  std::string spec() const { return entry() + ":" + cls; }                // bundle.json's runs[].plugin
};

// "plugins/<sha256>/<file>.py:<Class>" with a bundle-safe file name
// (is_bundle_python_path) directly in the folder and a Python identifier as
// the class; nullopt for anything else.
std::optional<BundlePythonPlugin> parse_bundle_python_plugin(const std::string& spec);

// Whether `name` is a source file entry: plugins/<sha256>/<bundle-safe path>.
bool is_bundle_python_entry(const std::string& name);

// Why the folder `p` names, whose files (relative path -> SHA-256 of the bytes
// extracted) are `in_folder`, is not the sources `result` (run `run`) records:
// a file recorded but not there, there but not recorded, of another SHA-256,
// a folder name that is not python_sources_sha256 of plugin.source.files or
// not plugin.sha256, another class or class file. nullopt when it is.
std::optional<std::string> python_folder_problem(const nlohmann::json& result, const std::string& run,
                                                 const BundlePythonPlugin& p,
                                                 const std::map<std::string, std::string>& in_folder);

// What submit packs for a result with plugin.source: each recorded file,
// checked where plugin.file says it is.
struct PythonPack {
  BundlePythonPlugin plugin;
  struct File {
    std::string entry;  // plugins/<sha256>/<relative path>
    std::filesystem::path source;
    std::string sha256;
  };
  std::vector<File> files;
};

// Throws lra::Error(usage) naming `result_file` and the source file when a
// recorded file is missing, has changed since the run, or has a name a bundle
// cannot carry; Error(data) when plugin.source cannot be read.
PythonPack python_pack(const nlohmann::json& result, const std::filesystem::path& result_file);

}  // namespace lra::host
