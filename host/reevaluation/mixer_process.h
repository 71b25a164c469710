// The process boundary of a re-evaluation: the verifier (trusted, host code
// only) builds the whole model itself and keeps every mixer of it in a
// confined process (reevaluation/mixer_server.h) that sees nothing but its
// own tensors and, per call, the mixer's input and mask. A RemoteMixer
// stands in for each block's mixer inside the verifier's model: it holds
// the mixer's tensors as the verifier's own (so model.pt loads, counts and
// optimizer groups work on them as on any mixer), sends them across before a
// forward call whenever they changed, and returns the output tensor it gets
// back, checked for shape. Protocol and diagram: docs/architecture.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/backbone.h"
#include "reevaluation/mixer_wire.h"
#include "reevaluation/sandbox.h"

namespace lra::host {

struct MixerProcessOptions {
  std::string exe;                                // lrahost itself
  std::string plugin;                             // what `mixer-server --plugin` gets (the staged copy)
  std::vector<std::filesystem::path> read_only;   // the staged plugin (and the host's Python plugin)
  std::filesystem::path scratch;                  // its only writable folder; no file of the run is in it
  SandboxLimits limits;                           // timeout_seconds: the process's whole life
  bool sandboxed = true;
  std::string device = "cpu";
  int threads = 1;
  int call_timeout_seconds = 600;                 // one request's answer
};

class MixerProcess {
 public:
  // Starts the process (Error(storage) only when no channel can be made).
  explicit MixerProcess(const MixerProcessOptions& o);
  ~MixerProcess();
  // Has it open the plugin: its name and ABI minor version. Anything that goes
  // wrong with the process, here or in a later call, is Error(plugin) in the
  // verifier's words; its own output stays in log_tail().
  void open();

  const std::string& plugin_name() const { return name_; }
  const MixerProcessOptions& options() const { return o_; }
  // How long open() waited for the process (its start, LibTorch's loading, the plugin's opening).
  double open_seconds() const { return open_seconds_; }
  uint32_t abi_minor() const { return abi_minor_; }

  struct Created {
    uint32_t id = 0;
    std::vector<wire::NamedTensor> tensors;  // as freshly created
    std::vector<lra::ParamHint> hints;
  };
  // Creates a mixer from the global CPU generator's state, which then
  // continues from where the creation left it (the run's random stream).
  Created create(const lra::MixerSpec& spec, const std::map<std::string, std::string>& options);
  void load(uint32_t id, const std::vector<wire::NamedTensor>& tensors);
  at::Tensor forward(uint32_t id, const at::Tensor& x, const at::Tensor& mask, bool training, bool autocast);

  // Closes the channel and waits for the process's end (killed after 10 s).
  SandboxOutcome stop();
  // What it printed, for the maintainer's local log (never published).
  std::string log_tail();

  struct Stats {
    int64_t calls = 0;
    uint64_t bytes = 0;     // sent and received
    double seconds = 0;     // waiting for answers
  };
  const Stats& stats() const { return stats_; }

 private:
  wire::Message call(wire::Op op, const wire::Writer& body, const std::string& what);
  [[noreturn]] void fail(const std::string& why);

  MixerProcessOptions o_;
  int channel_ = -1;
  std::unique_ptr<SandboxProcess> process_;
  std::string name_;
  uint32_t abi_minor_ = 0;
  double open_seconds_ = 0;
  bool broken_ = false;
  std::string broken_why_;
  std::optional<SandboxOutcome> outcome_;
  Stats stats_;
};

// The MixerFactory of a model whose mixers live in `process`, built with the
// run's resolved mixer options (given as recorded; the process types them).
MixerFactory remote_mixer_factory(MixerProcess& process, const std::map<std::string, std::string>& options);

}  // namespace lra::host
