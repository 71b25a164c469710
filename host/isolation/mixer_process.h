// The host's side of the process boundary: the host (the verifier of a
// re-evaluation, or `run --isolate`; host code only) builds the whole model
// itself and keeps every mixer of it in a confined process
// (isolation/mixer_server.h) that sees nothing but its own tensors and, per
// call, the mixer's input and mask (and, training, the output's gradient).
// MixerProcess is the channel and its requests; RemoteMixer
// (isolation/remote_mixer.h) stands in for each block's mixer. Protocol and
// diagram: docs/architecture.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <mutex>

#include "isolation/mixer_wire.h"
#include "isolation/plugin_description.h"
#include "isolation/sandbox.h"
#include "model/backbone.h"

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
  // Has it open the plugin and describe it. Anything that goes wrong with
  // the process, here or in a later call, is Error(plugin) in the host's
  // words; its own output stays in log_tail().
  void open();

  const PluginDescription& description() const { return description_; }
  const std::string& plugin_name() const { return description_.name; }
  const MixerProcessOptions& options() const { return o_; }
  // How long open() waited for the process (its start, LibTorch's loading, the plugin's opening).
  double open_seconds() const { return open_seconds_; }
  uint32_t abi_minor() const { return description_.abi_minor; }

  struct Created {
    uint32_t id = 0;
    std::vector<wire::NamedTensor> tensors;  // as freshly created
    std::vector<lra::ParamHint> hints;
    bool decodes = false;  // causal, SDK 1.3 or later, and its decodes() said so
  };
  // Creates a mixer from the global CPU generator's state, which then
  // continues from where the creation left it (the run's random stream).
  Created create(const lra::MixerSpec& spec, const std::map<std::string, std::string>& options);
  void load(uint32_t id, const std::vector<wire::NamedTensor>& tensors);
  // One forward call. `record`: the mixer records its attention
  // probabilities for this call (LRA_CAP_ATTENTION_PROBS), answered in
  // `probs` (undefined when it kept none). `grad`: its graph is kept in the
  // process for one backward call (`call`).
  struct Forward {
    bool training = false, autocast = false, grad = false, record = false;
  };
  struct Answer {
    at::Tensor out, probs;
    int64_t call = -1;
    // Buffers the call changed (index in module_tensors order, new value);
    // the caller checks them against its own (RemoteMixer keeps them).
    std::vector<std::pair<uint32_t, at::Tensor>> buffers;
  };
  Answer forward(uint32_t id, const at::Tensor& x, const at::Tensor& mask, const Forward& how);
  at::Tensor forward(uint32_t id, const at::Tensor& x, const at::Tensor& mask, bool training, bool autocast) {
    return forward(id, x, mask, Forward{training, autocast, false, false}).out;
  }
  // Decoding token by token (lra::Mixer::decode_start / decode_step, SDK 1.3):
  // the state's tensors live here and cross with every step; an answer of
  // another shape than asked for is Error(plugin).
  std::vector<at::Tensor> decode_start(uint32_t id, int64_t batch, bool float64);
  at::Tensor decode_step(uint32_t id, const at::Tensor& x, std::vector<at::Tensor>& state, int64_t position);
  // The gradients of a kept call: its input's and those of the mixer's
  // `parameters` trainable parameters (undefined: unused), checked for shape
  // against `x` and `params` (module_tensors order).
  struct Gradients {
    at::Tensor x;
    std::vector<at::Tensor> params;
  };
  Gradients backward(int64_t call, const at::Tensor& grad_out, const at::Tensor& x,
                     const std::vector<at::Tensor>& params);
  // What the host no longer needs, sent before its next request (from any
  // thread: a graph is freed where autograd frees it).
  void release_later(int64_t call);
  void drop_later(uint32_t mixer);

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
  void continue_generator(const at::Tensor& before, const at::Tensor& after, const std::string& what);

  MixerProcessOptions o_;
  int channel_ = -1;
  std::unique_ptr<SandboxProcess> process_;
  PluginDescription description_;
  double open_seconds_ = 0;
  std::mutex release_mutex_;
  std::vector<int64_t> released_calls_;
  std::vector<uint32_t> dropped_mixers_;
  bool broken_ = false;
  std::string broken_why_;
  std::optional<SandboxOutcome> outcome_;
  Stats stats_;
};


}  // namespace lra::host
