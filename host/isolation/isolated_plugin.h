// `run --isolate`: the mixer plugin opened in a mixer process of its own
// (isolation/mixer_process.h, bubblewrap as for a re-evaluation) instead of
// the host's. loaded() is a LoadedPlugin the run uses like any other — its
// descriptor, identity, declared options and mixer().create() — whose mixers
// are RemoteMixers: the host holds their tensors and trains them, the process
// only computes forward and backward calls of the plugin's code. The plugin's
// code never runs in the host's process; nothing of the run (data, labels,
// checkpoints, result) is in the process's view.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "isolation/cpu_turns.h"
#include "isolation/held_folder.h"
#include "isolation/mixer_process.h"
#include "plugins/loader.h"

namespace lra::host {

struct IsolationOptions {
  std::string device = "cpu";  // the run's device, resolved ("cpu" or "cuda")
  int threads = 1;
  bool sandboxed = true;
  int call_timeout_seconds = 3600;
};

class IsolatedPlugin {
 public:
  // `plugin`: a name, a .so path or FILE.py:CLASS, as --plugin takes it. A
  // compiled plugin's descriptor is checked from its file first (as
  // load_plugin does, without loading it); then the process starts and opens it.
  IsolatedPlugin(const std::string& plugin, const IsolationOptions& o);
  ~IsolatedPlugin();
  IsolatedPlugin(const IsolatedPlugin&) = delete;
  IsolatedPlugin& operator=(const IsolatedPlugin&) = delete;

  const LoadedPlugin& loaded() const { return loaded_; }
  MixerProcess& process() { return *process_; }
  // Stops the process and writes what it printed to `log_file`.
  void finish(const std::filesystem::path& log_file);

 private:
  struct Interface;
  std::unique_ptr<CpuTurns> turns_;  // the host's BLAS leaves the cores to the process in its turn
  std::unique_ptr<HeldFolder> area_;  // staging and scratch under /tmp: removed at the end, swept if killed
  std::unique_ptr<MixerProcess> process_;
  std::unique_ptr<Interface> interface_;
  LoadedPlugin loaded_;
};

}  // namespace lra::host
