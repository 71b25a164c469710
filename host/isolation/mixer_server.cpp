// The confined side of a re-evaluation (isolation/mixer_server.h): one
// loop that answers the verifier's requests with the plugin's mixers.
#include "isolation/mixer_server.h"

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/torch.h>

#include "device/device.h"
#include "lra/dropout.h"
#include "model/random_state.h"
#include "lra/status.h"
#include "plugins/loader.h"
#include "plugins/mixer_factory.h"
#include "plugins/mixer_options.h"
#include "isolation/mixer_limits.h"
#include "isolation/mixer_wire.h"
#include "isolation/plugin_description.h"
#include "train/autocast.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

using wire::Op;

class Server {
 public:
  explicit Server(const MixerServerOptions& o) : o_(o), device_(pick_device(o.device)) {}

  // The answer's body; `w` is filled in place (its tensors stay alive with it).
  void handle(const wire::Message& m, wire::Writer& w) {
    wire::Reader r(m.body, "request");
    switch (m.op) {
      case Op::hello: hello(w); break;
      case Op::create: create(r, w); break;
      case Op::load: load(r); break;
      case Op::forward: forward(r, w); break;
      case Op::backward: backward(r, w); break;
      case Op::release: release(r); break;
      case Op::decode_start: decode_start(r, w); break;
      case Op::decode_step: decode_step(r, w); break;
      default: throw Error(ErrorKind::usage, "unknown request");
    }
    r.end();
  }

 private:
  void hello(wire::Writer& w) {
    plugin_ = &open_plugin(o_.plugin, LRA_KIND_MIXER);
    const Descriptor& d = plugin_->descriptor;
    PluginDescription out{d.name, d.version, d.description, d.capabilities, d.abi_major, d.abi_minor, {},
                          plugin_->sha256, plugin_->source.is_null() ? "" : plugin_->source.dump()};
    if (auto st = plugin_->mixer().options(&out.options); !st.ok()) throw Error(st.kind, st.message);
    write_description(w, out);
  }

  void create(wire::Reader& r, wire::Writer& w) {
    if (!plugin_) throw Error(ErrorKind::usage, "create before hello");
    std::map<std::string, std::string> given;
    for (uint32_t n = r.u32(), i = 0; i < n; ++i) {
      std::string key = r.str(1024);
      given[key] = r.str(1 << 16);
    }
    const lra::MixerSpec spec = r.spec();
    set_cpu_generator_state(r.tensor(1 << 20));
    // Created on the CPU from the verifier's generator state, as the run built it.
    std::shared_ptr<lra::Mixer> mixer = plugin_mixer_factory(*plugin_, resolve_mixer_options(*plugin_, given))(spec);
    w.u32(static_cast<uint32_t>(mixers_.size()));
    w.tensors(wire::module_tensors(*mixer));
    std::vector<lra::ParamHint> hints;
    if (plugin_->descriptor.abi_minor >= 2) hints = mixer->optimizer_hints();
    w.u32(static_cast<uint32_t>(hints.size()));
    for (const auto& h : hints) {
      w.str(h.name);
      w.u8(h.no_weight_decay ? 1 : 0);
      w.f64(h.lr_scale);
      w.f64(h.lr_max);
    }
    w.u8(plugin_->descriptor.abi_minor >= 3 && spec.causal && mixer->decodes() ? 1 : 0);
    w.tensor(cpu_generator_state());
    mixer->to(device_);
    mixers_.push_back(std::move(mixer));
    marks_.push_back(wire::tensor_marks(wire::module_tensors(*mixers_.back())));
  }

  lra::Mixer& mixer_at(uint32_t id) {
    if (id >= mixers_.size() || !mixers_[id]) throw Error(ErrorKind::usage, "no mixer " + std::to_string(id));
    return *mixers_[id];
  }

  void load(wire::Reader& r) {
    const uint32_t id = r.u32();
    lra::Mixer& mixer = mixer_at(id);
    const auto given = r.tensors(kMaxMixerTensors, kMaxTensorElements);
    std::map<std::string, at::Tensor> own;
    for (const auto& nt : wire::module_tensors(mixer)) own[nt.name] = nt.tensor;
    if (given.size() != own.size()) throw Error(ErrorKind::usage, "load: another number of tensors than the mixer has");
    torch::NoGradGuard no_grad;
    for (const auto& nt : given) {
      const auto it = own.find(nt.name);
      if (it == own.end() || it->second.sizes() != nt.tensor.sizes())
        throw Error(ErrorKind::usage, "load: tensor '" + nt.name + "' is not one of the mixer's, of its shape");
      it->second.copy_(nt.tensor);
    }
    marks_.at(id) = wire::tensor_marks(wire::module_tensors(mixer));
  }

  // With `grad`, the call's graph is kept (its input a leaf of its own) for
  // a backward call, under an id the answer carries.
  void forward(wire::Reader& r, wire::Writer& w) {
    const uint32_t id = r.u32();
    lra::Mixer& mixer = mixer_at(id);
    const bool training = r.u8() != 0, autocast = r.u8() != 0, grad = r.u8() != 0, record = r.u8() != 0;
    at::Tensor x = r.tensor(kMaxTensorElements).to(device_);
    at::Tensor mask;
    if (r.u8()) mask = r.tensor(kMaxTensorElements).to(device_);
    // The host's CPU generator, continued here and handed back: the mixer's
    // draws (dropout) come from the run's one stream, as in process.
    set_cpu_generator_state(r.tensor(1 << 20));
    // The host's description of its forward pass, if it is in one (lra/dropout.h), for this call.
    lra_dropout_rows* rows = lra_dropout_rows_v1 ? lra_dropout_rows_v1() : nullptr;
    const bool described = r.u8() != 0;
    if (described) {
      lra_dropout_rows given{};
      given.seed = static_cast<uint64_t>(r.i64());
      given.calls = static_cast<uint64_t>(r.i64());
      given.first = r.i64();
      given.local = r.i64();
      given.global = r.i64();
      given.towers = r.i64();
      given.active = 1;
      if (rows) *rows = given;
    }
    struct EndPass {
      lra_dropout_rows* rows;
      ~EndPass() {
        if (rows) rows->active = 0;
      }
    } end_pass{rows};
    mixer.train(training);
    if (grad) {
      if (graphs_.size() >= kMaxPendingGraphs) throw Error(ErrorKind::usage, "too many forward calls held for backward");
      if (!x.is_floating_point()) throw Error(ErrorKind::usage, "a forward call for backward with a non-float input");
      x = x.detach().requires_grad_(true);
    }
    // LRA_CAP_ATTENTION_PROBS: recording on for this call only, as the host does in process.
    if (record) mixer.set_record_attention(true);
    at::Tensor y;
    {
      torch::AutoGradMode grad_mode(grad);
      CudaBf16Autocast bf16(autocast && device_.is_cuda());
      y = mixer.forward(x, mask);
    }
    w.tensor(y);
    w.tensor(cpu_generator_state());
    if (described) w.i64(rows ? static_cast<int64_t>(rows->calls) : 0);
    // Buffers the call changed (a redraw of random features): the host keeps them.
    const auto all = wire::module_tensors(mixer);
    const wire::TensorMarks now = wire::tensor_marks(all);
    std::vector<uint32_t> changed;
    for (size_t i = 0; i < now.size(); ++i)
      if (!all[i].parameter && now[i] != marks_.at(id)[i]) changed.push_back(static_cast<uint32_t>(i));
    w.u32(static_cast<uint32_t>(changed.size()));
    for (uint32_t i : changed) {
      w.u32(i);
      w.tensor(all[i].tensor);
    }
    marks_.at(id) = now;
    if (record) {
      mixer.set_record_attention(false);
      const at::Tensor probs = mixer.last_attention();
      w.u8(probs.defined() ? 1 : 0);
      if (probs.defined()) w.tensor(probs);
    }
    if (grad) {
      w.i64(next_graph_);
      graphs_[next_graph_++] = Graph{id, x, y};
    }
  }

  // The gradients of a kept call: its input's, then each parameter's that
  // requires one, in module_tensors order (undefined: it took no part).
  void backward(wire::Reader& r, wire::Writer& w) {
    const int64_t call = r.i64();
    const auto it = graphs_.find(call);
    if (it == graphs_.end()) throw Error(ErrorKind::usage, "backward for a call that is not held");
    Graph g = std::move(it->second);
    graphs_.erase(it);
    const at::Tensor grad_y = r.tensor(g.y.numel()).to(g.y.device()).to(g.y.scalar_type());
    if (!grad_y.sizes().equals(g.y.sizes())) throw Error(ErrorKind::usage, "an output gradient of another shape");
    std::vector<at::Tensor> inputs = {g.x};
    for (const auto& nt : wire::module_tensors(mixer_at(g.mixer)))
      if (nt.parameter && nt.tensor.requires_grad()) inputs.push_back(nt.tensor);
    std::vector<at::Tensor> grads;
    if (g.y.requires_grad())
      grads = torch::autograd::grad({g.y}, inputs, {grad_y}, /*retain_graph=*/false, /*create_graph=*/false,
                                    /*allow_unused=*/true);
    else
      grads.resize(inputs.size());
    w.u32(static_cast<uint32_t>(grads.size()));
    for (const auto& t : grads) {
      w.u8(t.defined() ? 1 : 0);
      if (t.defined()) w.tensor(t);
    }
  }

  // Decoding token by token (SDK 1.3), in evaluation mode without gradients:
  // the state lives on the verifier's side and crosses with every step, so
  // what the verifier counts is all the steps are given.
  lra::Mixer& decoding_mixer(uint32_t id) {
    lra::Mixer& mixer = mixer_at(id);
    if (plugin_->descriptor.abi_minor < 3 || !mixer.decodes())
      throw Error(ErrorKind::usage, "a decoding request for a mixer that does not decode");
    mixer.eval();
    return mixer;
  }

  std::vector<at::Tensor> read_state(wire::Reader& r) {
    std::vector<at::Tensor> state = r.state(kMaxMixerTensors, kMaxTensorElements);
    for (auto& t : state)
      if (t.defined()) t = t.to(device_);
    return state;
  }

  void decode_start(wire::Reader& r, wire::Writer& w) {
    lra::Mixer& mixer = decoding_mixer(r.u32());
    const int64_t batch = r.i64();
    const bool float64 = r.u8() != 0;
    if (batch < 1 || batch > (int64_t{1} << 20)) throw Error(ErrorKind::usage, "a decoding batch out of range");
    torch::NoGradGuard no_grad;
    w.state(mixer.decode_start(
        batch, torch::TensorOptions().dtype(float64 ? torch::kDouble : torch::kFloat).device(device_)));
  }

  void decode_step(wire::Reader& r, wire::Writer& w) {
    lra::Mixer& mixer = decoding_mixer(r.u32());
    const int64_t position = r.i64();
    const at::Tensor x = r.tensor(kMaxTensorElements).to(device_);
    std::vector<at::Tensor> state = read_state(r);
    torch::NoGradGuard no_grad;
    w.tensor(mixer.decode_step(x, state, position));
    w.state(state);  // more tensors than the verifier reads are refused there
  }

  // Graphs and mixers the host dropped (their forward's graph freed without a
  // backward, a mixer it made for a check).
  void release(wire::Reader& r) {
    for (uint32_t n = r.u32(), i = 0; i < n; ++i) graphs_.erase(r.i64());
    for (uint32_t n = r.u32(), i = 0; i < n; ++i) {
      const uint32_t id = r.u32();
      if (id < mixers_.size()) mixers_[id].reset();
    }
  }

  MixerServerOptions o_;
  torch::Device device_;
  const LoadedPlugin* plugin_ = nullptr;
  std::vector<std::shared_ptr<lra::Mixer>> mixers_;
  std::vector<wire::TensorMarks> marks_;  // per mixer, as the host last saw them
  struct Graph {
    uint32_t mixer;
    at::Tensor x, y;
  };
  std::map<int64_t, Graph> graphs_;
  int64_t next_graph_ = 0;
};

}  // namespace

int serve_mixer(int fd, const MixerServerOptions& o) {
  configure_cpu_threads(o.threads > 0 ? o.threads : 1);
  Server server(o);
  for (;;) {
    std::optional<wire::Message> m;
    try {
      m = wire::receive_message(fd, kMaxRequestBytes, -1);
    } catch (const Error& e) {
      std::fprintf(stderr, "mixer-server: %s\n", e.what());
      return static_cast<int>(ErrorKind::usage);
    }
    if (!m) return 0;  // the verifier is done
    wire::Writer answer;
    uint32_t failed = 0;  // the ErrorKind of a request that failed; its text only goes to the log
    try {
      server.handle(*m, answer);
    } catch (const Error& e) {
      std::fprintf(stderr, "mixer-server: %s\n", e.what());
      failed = static_cast<uint32_t>(e.kind());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mixer-server: %s\n", e.what());
      failed = static_cast<uint32_t>(ErrorKind::plugin);
    }
    std::fflush(stderr);
    if (failed) {
      wire::Writer kind;
      kind.u32(failed);
      wire::send_message(fd, Op::error, kind);
    } else {
      wire::send_message(fd, Op::ok, answer);
    }
  }
}

}  // namespace lra::host
