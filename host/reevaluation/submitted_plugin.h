// The submitted mixer of one run, from the unpacked bundle into the sandbox
// (reevaluate.cpp): a plugin .so (plugins/<sha256>.so) or a Python mixer's
// source folder (plugins/<sha256>/, reevaluation/bundle_python.h). Either is
// copied into the sandbox area, readable by user nobody, and bound read-only;
// a Python mixer also needs the host's own Python plugin bound, which the
// verifier itself never loads.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "reevaluation/bundle_python.h"

namespace lra::host {

struct SubmittedPlugin {
  std::filesystem::path so;                  // a compiled plugin's file in the unpacked bundle
  std::optional<BundlePythonPlugin> python;  // a Python mixer
  std::filesystem::path python_folder;       // its folder in the unpacked bundle
  std::filesystem::path source_folder;       // a compiled plugin's sources/<sha256> folder; empty: none bundled
  std::string sha256() const;                // the identity the bundle names it by (plugin.sha256)
  std::string shown() const;                 // its name in the bundle, for messages
};

// bundle.json's runs[].plugin in the unpacked bundle `dir`; nullopt unless it
// is a name a bundle may hold and the file (the class's file) is there.
std::optional<SubmittedPlugin> submitted_plugin(const std::filesystem::path& dir, const std::string& plugin);

struct StagedPlugin {
  std::string spec;                           // what mixer-server's --plugin gets
  std::filesystem::path staged;               // the staged file or folder
  std::vector<std::filesystem::path> extra;   // also bound read-only in every pass (the host's Python plugin)
};

// Copies the plugin into `into` (an existing folder of the sandbox area).
StagedPlugin stage_plugin(const SubmittedPlugin& p, const std::filesystem::path& into);

}  // namespace lra::host
