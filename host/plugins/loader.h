// Loading plugins after their descriptor passed the checks, and finding them
// by name. Loaded libraries are never unloaded: objects a plugin creates
// (modules, deleters, vtables) may live until the process exits.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lra/mixer.h"
#include "lra/task.h"
#include "plugins/descriptor.h"

namespace lra::host {

struct LoadedPlugin {
  Descriptor descriptor;
  std::string sha256;          // of the library file; a Python mixer's: of its sources
  const void* interface = nullptr;
  // A Python mixer's sources and interpreter (plugins/python_mixer.h):
  // {"language": "python", "class", "file", "files": {path: sha256}, "python", "torch"};
  // null for a compiled plugin.
  nlohmann::json source;

  // The plugin's interface as the kind its descriptor declares. Asking a task
  // plugin for mixer() (or a mixer plugin for task()) is a host bug, never a
  // cast: it throws lra::Error(internal) naming the plugin and its kind; a
  // kind the SDK does not define throws lra::Error(plugin).
  const MixerPlugin& mixer() const;
  const TaskPlugin& task() const;
};

// Checks the descriptor from the file, then dlopen()s (RTLD_NOW|RTLD_LOCAL),
// calls the entry point and cross-checks what it returns. Throws
// lra::Error(plugin) naming the file and every problem.
const LoadedPlugin& load_plugin(const std::filesystem::path& file, uint32_t kind);

// Directories searched for plugins: $LRA_PLUGIN_PATH (':'-separated), then
// builtin_plugin_dir().
std::vector<std::filesystem::path> plugin_search_dirs();

// Where the plugins built and installed with this lrahost live:
// <dir of lrahost>/../lib/lrahost/plugins.
std::filesystem::path builtin_plugin_dir();

// True when `file` lies directly in builtin_plugin_dir() (compared as
// canonical paths): a plugin the host shipped with, not one from
// $LRA_PLUGIN_PATH or a path that merely has a built-in's name.
bool is_builtin_plugin_file(const std::filesystem::path& file);

struct DiscoveredPlugin {
  std::filesystem::path file;
  Descriptor descriptor;           // valid when `error` is empty
  std::vector<std::string> problems;  // compatibility problems (empty = usable)
  std::string error;               // unreadable / not a plugin
};
std::vector<DiscoveredPlugin> discover_plugins();

// NAME (built-in or discovered), PATH (contains '/' or ends in .so) or a
// Python mixer FILE.py:CLASS (returned as it is) -> file.
// Throws lra::Error(plugin) listing the available names when nothing matches.
std::filesystem::path resolve_plugin(const std::string& name_or_path, uint32_t kind);

// Convenience: resolve + load.
const LoadedPlugin& open_plugin(const std::string& name_or_path, uint32_t kind);

// Names of discovered, compatible plugins of a kind (for messages and --help).
std::vector<std::string> available_plugin_names(uint32_t kind);

// Names of the mixers this host shipped with (compatible plugins in
// builtin_plugin_dir()), less the Python bridge, which is no mixer by itself: sorted.
std::vector<std::string> builtin_mixer_names();

}  // namespace lra::host
