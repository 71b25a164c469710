#include "isolation/isolated_plugin.h"

#include <unistd.h>

#include <cstring>

#include "common/atomic_file.h"
#include "common/sha256.h"
#include "common/python_source_files.h"
#include "common/python_sources.h"
#include "isolation/readable_copy.h"
#include "isolation/remote_mixer.h"
#include "lra/status.h"
#include "plugins/descriptor.h"
#include "plugins/mixer_options.h"
#include "plugins/python_mixer.h"
#include "results/run_record.h"

namespace lra::host {
namespace fs = std::filesystem;

namespace {

constexpr const char* kIsolateAreaPrefix = "lrahost-isolate-";
// Python sources staged for the process: what a mixer's own folder may hold.
constexpr size_t kMaxStagedPythonFiles = 2000;

// The .py files under a Python mixer's folder (its own modules), readable by
// the sandbox's user; hidden folders are left out.
void stage_python_folder(const fs::path& from, const fs::path& to) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.front() == '.' || name == "__pycache__")) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || it->path().extension() != ".py") continue;
    if (++n > kMaxStagedPythonFiles)
      throw Error(ErrorKind::usage, "--isolate: " + from.string() + " holds more than " +
                                        std::to_string(kMaxStagedPythonFiles) + " .py files; keep the mixer in a "
                                        "folder of its own");
    copy_readable(it->path(), to / fs::relative(it->path(), from));
  }
  make_readable_folder(to);
  for (auto it = fs::recursive_directory_iterator(to, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_directory()) make_readable_folder(it->path());
}


}  // namespace

// The plugin's interface as the run calls it: its declared options, and
// mixers created in the process.
struct IsolatedPlugin::Interface final : lra::MixerPlugin {
  MixerProcess* process = nullptr;
  std::vector<lra::OptionSpec> declared;
  lra::Status options(std::vector<lra::OptionSpec>* out) const noexcept override {
    *out = declared;
    return {};
  }
  lra::Status create(const lra::MixerSpec& spec, const lra::Params& options,
                     std::shared_ptr<lra::Mixer>* out) const noexcept override {
    try {
      *out = remote_mixer_factory(*process, option_texts(params_json(options)))(spec);
      return {};
    } catch (const Error& e) {
      return lra::Status{e.kind(), e.what()};
    } catch (const std::exception& e) {
      return lra::Status{ErrorKind::internal, e.what()};
    }
  }
};

IsolatedPlugin::IsolatedPlugin(const std::string& plugin, const IsolationOptions& o)
    : interface_(std::make_unique<Interface>()) {
  const bool python = is_python_mixer_spec(plugin);
  fs::path file;  // the compiled plugin, or the Python mixer's file
  std::string cls, spec_key;
  if (python) {
    const auto parts = split_python_spec(plugin);
    std::error_code ec;
    file = fs::canonical(parts->first, ec);
    if (ec || !fs::is_regular_file(file, ec))
      throw Error(ErrorKind::usage, "--plugin " + plugin + ": " + parts->first + " is not a readable file");
    cls = parts->second;
    spec_key = file.string() + ":" + cls;
  } else {
    file = fs::weakly_canonical(resolve_plugin(plugin, LRA_KIND_MIXER));
    // The file's descriptor, checked before any of its code runs anywhere.
    const Descriptor d = read_descriptor(file);
    if (auto problems = compatibility_problems(d, host_descriptor(), LRA_KIND_MIXER); !problems.empty()) {
      std::string why;
      for (const auto& p : problems) why += "\n  - " + p;
      throw Error(ErrorKind::plugin, "plugin " + file.string() + " cannot run in this host:" + why);
    }
    loaded_.descriptor = d;
  }
  // Staged under /tmp, readable by the sandbox's user nobody wherever the
  // plugin lies; what a killed run left there is swept first.
  HeldFolder::sweep_abandoned("/tmp", kIsolateAreaPrefix);
  area_ = std::make_unique<HeldFolder>("/tmp", kIsolateAreaPrefix,
                                       fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  const fs::path area = area_->path();
  make_readable_folder(area / "plugin");
  fs::create_directories(area / "scratch");
  MixerProcessOptions p;
  p.exe = fs::read_symlink("/proc/self/exe").string();
  if (python) {
    stage_python_folder(file.parent_path(), area / "plugin" / "src");
    p.plugin = (area / "plugin" / "src" / file.filename()).string() + ":" + cls;
    p.read_only = {area / "plugin", fs::canonical(builtin_plugin_dir() / "lra_mixer_python.so")};
  } else {
    copy_readable(file, area / "plugin" / file.filename());
    p.plugin = (area / "plugin" / file.filename()).string();
    p.read_only = {area / "plugin"};
  }
  p.scratch = area / "scratch";
  p.limits.timeout_seconds = 365 * 24 * 3600;  // a run may train for days; each call has its own limit
  p.limits.gpu = o.device.rfind("cuda", 0) == 0;
  p.sandboxed = o.sandboxed;
  p.device = o.device;
  p.threads = o.threads;
  p.call_timeout_seconds = o.call_timeout_seconds;
  process_ = std::make_unique<MixerProcess>(p);
  turns_ = std::make_unique<CpuTurns>(o.threads);
  process_->open();
  const PluginDescription& d = process_->description();
  if (python) {
    // The Python bridge's facts, the class's own from the process; the identity
    // is recomputed here from the recorded map of sources.
    loaded_.descriptor = read_descriptor(builtin_plugin_dir() / "lra_mixer_python.so");
    loaded_.descriptor.file = spec_key;
    loaded_.descriptor.name = d.name;
    loaded_.descriptor.version = d.version;
    loaded_.descriptor.description = d.description;
    loaded_.descriptor.capabilities = d.capabilities;
    try {
      loaded_.source = nlohmann::json::parse(d.source_json);
    } catch (const nlohmann::json::exception&) {
      throw Error(ErrorKind::plugin, "the mixer process described the Python mixer's sources in a form that is not JSON");
    }
    const nlohmann::json* files = loaded_.source.is_object() && loaded_.source.contains("files") ?
                                      &loaded_.source["files"] : nullptr;
    if (!files || !files->is_object())
      throw Error(ErrorKind::plugin, "the mixer process described no sources of the Python mixer");
    loaded_.sha256 = python_sources_sha256(*files);
  } else {
    if (d.name != loaded_.descriptor.name || d.version != loaded_.descriptor.version)
      throw Error(ErrorKind::plugin, "the mixer process opened a plugin named otherwise than " + file.string() +
                                         "'s descriptor");
    loaded_.sha256 = sha256_file(file);
  }
  interface_->process = process_.get();
  interface_->declared = d.options;
  loaded_.interface = static_cast<const lra::MixerPlugin*>(interface_.get());
}

IsolatedPlugin::~IsolatedPlugin() {
  process_.reset();  // before its folder goes
}

void IsolatedPlugin::finish(const fs::path& log_file) {
  try {
    write_file_atomic(log_file, process_->log_tail());
  } catch (const Error&) {
  }
}

}  // namespace lra::host
