#include "plugins/loader.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include "common/sha256.h"
#include "common/text.h"
#include "lra/status.h"
#include "plugins/python_mixer.h"

namespace lra::host {
namespace {

[[noreturn]] void reject(const std::filesystem::path& file, const std::vector<std::string>& problems) {
  std::string msg = "plugin '" + file.string() + "' rejected:";
  for (const auto& p : problems) msg += "\n  - " + p;
  throw Error(ErrorKind::plugin, msg);
}

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<LoadedPlugin>> by_path;
  std::vector<std::unique_ptr<boost::dll::shared_library>> libraries;
};

// Deliberately leaked: libraries must outlive every object their code made,
// including statics destroyed at exit (ggml and Triton do the same).
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// The entry point's interface is only as typed as the descriptor's kind says.
// Another known kind is the host's mistake (internal); a kind the SDK does not
// define is the plugin's (its interface has no type the host could use).
void require_kind(const LoadedPlugin& p, uint32_t wanted, const char* accessor) {
  const uint32_t kind = p.descriptor.kind;
  if (kind == wanted) return;
  const std::string who = "plugin '" + p.descriptor.name + "' (" + p.descriptor.file.string() + ")";
  if (kind != LRA_KIND_MIXER && kind != LRA_KIND_TASK)
    throw Error(ErrorKind::plugin, who + " declares kind " + std::to_string(kind) +
                                       ", neither mixer (1) nor task (2), so it has no " + kind_name(wanted) +
                                       " interface: build it with LRA_MIXER_PLUGIN or LRA_TASK_PLUGIN");
  throw Error(ErrorKind::internal, who + " is a " + kind_name(kind) + " plugin, but the host asked it for its " +
                                       kind_name(wanted) + " interface (LoadedPlugin::" + accessor +
                                       "): load it as a " + kind_name(wanted) + " plugin");
}

}  // namespace

const MixerPlugin& LoadedPlugin::mixer() const {
  require_kind(*this, LRA_KIND_MIXER, "mixer()");
  return *static_cast<const MixerPlugin*>(interface);
}

const TaskPlugin& LoadedPlugin::task() const {
  require_kind(*this, LRA_KIND_TASK, "task()");
  return *static_cast<const TaskPlugin*>(interface);
}

const LoadedPlugin& load_plugin(const std::filesystem::path& file_in, uint32_t kind) {
  if (is_python_mixer_spec(file_in.string())) {
    if (kind != LRA_KIND_MIXER)
      throw Error(ErrorKind::usage, file_in.string() + " names a Python mixer; a " + kind_name(kind) +
                                        " plugin is a compiled library (.so)");
    return load_python_mixer(file_in.string());
  }
  const auto file = std::filesystem::weakly_canonical(file_in);
  auto& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  if (auto it = reg.by_path.find(file.string()); it != reg.by_path.end()) {
    auto problems = compatibility_problems(it->second->descriptor, host_descriptor(), kind);
    if (!problems.empty()) reject(file, problems);
    return *it->second;
  }

  // 1. Check the descriptor read from the file: no plugin code has run yet.
  Descriptor d = read_descriptor(file);
  auto problems = compatibility_problems(d, host_descriptor(), kind);
  if (!problems.empty()) reject(file, problems);

  // 2. Load with immediate binding so a missing symbol fails here, not mid-run.
  auto lib = std::make_unique<boost::dll::shared_library>();
  boost::dll::fs::error_code ec;
  lib->load(file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec) reject(file, {"the dynamic loader refused it: " + ec.message()});
  if (!lib->has(LRA_PLUGIN_ENTRY_SYMBOL))
    reject(file, {std::string("it exports no ") + LRA_PLUGIN_ENTRY_SYMBOL + "() entry point"});
  auto entry = lib->get<const lra_plugin_api*()>(LRA_PLUGIN_ENTRY_SYMBOL);

  // 3. Call the entry point and cross-check it against the file's record.
  const lra_plugin_api* api = nullptr;
  try {
    api = entry();
  } catch (const std::exception& e) {
    reject(file, {std::string("entry point threw: ") + e.what()});
  }
  if (!api || api->struct_size < kPluginApiSizeV1_0 || !api->info || !api->interface)
    reject(file, {"entry point returned an incomplete plugin table"});
  Descriptor live = descriptor_from_record(*api->info, file);
  if (api->abi_major != d.abi_major || live.name != d.name || live.version != d.version ||
      live.kind != d.kind || live.torch_version != d.torch_version)
    reject(file, {"entry point describes '" + live.name + "' " + live.version + " but the file's descriptor says '" +
                  d.name + "' " + d.version});

  auto loaded = std::make_unique<LoadedPlugin>();
  loaded->descriptor = d;
  loaded->sha256 = sha256_file(file);
  loaded->interface = api->interface;
  reg.libraries.push_back(std::move(lib));
  auto& ref = *loaded;
  reg.by_path[file.string()] = std::move(loaded);
  return ref;
}

std::vector<std::filesystem::path> plugin_search_dirs() {
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("LRA_PLUGIN_PATH")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      auto end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) dirs.emplace_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  dirs.push_back(builtin_plugin_dir());
  return dirs;
}

std::filesystem::path builtin_plugin_dir() {
  auto exe_dir = boost::dll::program_location().parent_path();
  return std::filesystem::path(exe_dir.parent_path().string()) / "lib" / "lrahost" / "plugins";
}

bool is_builtin_plugin_file(const std::filesystem::path& file) {
  std::error_code ec1, ec2;
  const auto dir = std::filesystem::canonical(builtin_plugin_dir(), ec1);
  const auto parent = std::filesystem::canonical(std::filesystem::absolute(file).parent_path(), ec2);
  return !ec1 && !ec2 && dir == parent;
}

std::vector<DiscoveredPlugin> discover_plugins() {
  std::vector<DiscoveredPlugin> out;
  for (const auto& dir : plugin_search_dirs()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".so") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      DiscoveredPlugin p;
      p.file = f;
      try {
        p.descriptor = read_descriptor(f);
        p.problems = compatibility_problems(p.descriptor, host_descriptor(), 0);
      } catch (const Error& e) {
        p.error = e.what();
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<std::string> available_plugin_names(uint32_t kind) {
  std::vector<std::string> names;
  for (const auto& p : discover_plugins())
    if (p.error.empty() && p.problems.empty() && p.descriptor.kind == kind) names.push_back(p.descriptor.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::vector<std::string> builtin_mixer_names() {
  std::vector<std::string> names;
  for (const auto& p : discover_plugins())
    if (p.error.empty() && p.problems.empty() && p.descriptor.kind == LRA_KIND_MIXER &&
        p.descriptor.name != kPythonPluginName && is_builtin_plugin_file(p.file))
      names.push_back(p.descriptor.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::filesystem::path resolve_plugin(const std::string& name_or_path, uint32_t kind) {
  if (is_python_mixer_spec(name_or_path)) return name_or_path;
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               std::filesystem::path(name_or_path).extension() == ".so";
  if (looks_like_path) return name_or_path;
  // First match in search order wins, as with PATH.
  for (const auto& p : discover_plugins())
    if (p.error.empty() && p.descriptor.name == name_or_path && p.descriptor.kind == kind) return p.file;
  auto names = available_plugin_names(kind);
  throw Error(ErrorKind::plugin, std::string("no ") + kind_name(kind) + " plugin named '" + name_or_path +
                                     "' (available: " + (names.empty() ? "none found" : text::join(names, ", ")) +
                                     "); give a name from that list, the path of a .so, or a Python class FILE.py:CLASS");
}

const LoadedPlugin& open_plugin(const std::string& name_or_path, uint32_t kind) {
  return load_plugin(resolve_plugin(name_or_path, kind), kind);
}

}  // namespace lra::host
