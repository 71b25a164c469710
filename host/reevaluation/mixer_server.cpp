// The confined side of a re-evaluation (reevaluation/mixer_server.h): one
// loop that answers the verifier's requests with the plugin's mixers.
#include "reevaluation/mixer_server.h"

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "device/device.h"
#include "lra/status.h"
#include "plugins/loader.h"
#include "plugins/mixer_factory.h"
#include "plugins/mixer_options.h"
#include "reevaluation/mixer_limits.h"
#include "reevaluation/mixer_wire.h"
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
      case Op::hello:
        plugin_ = &open_plugin(o_.plugin, LRA_KIND_MIXER);
        w.str(plugin_->descriptor.name);
        w.u32(plugin_->descriptor.abi_minor);
        break;
      case Op::create: create(r, w); break;
      case Op::load: load(r); break;
      case Op::forward: forward(r, w); break;
      default: throw Error(ErrorKind::usage, "unknown request");
    }
    r.end();
  }

 private:
  void create(wire::Reader& r, wire::Writer& w) {
    if (!plugin_) throw Error(ErrorKind::usage, "create before hello");
    std::map<std::string, std::string> given;
    for (uint32_t n = r.u32(), i = 0; i < n; ++i) {
      std::string key = r.str(1024);
      given[key] = r.str(1 << 16);
    }
    const lra::MixerSpec spec = r.spec();
    const at::Tensor state = r.tensor(1 << 20);
    auto gen = at::detail::getDefaultCPUGenerator();
    {
      const std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(state);
    }
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
    {
      const std::lock_guard<std::mutex> lock(gen.mutex());
      w.tensor(gen.get_state());
    }
    mixer->to(device_);
    mixers_.push_back(std::move(mixer));
  }

  lra::Mixer& mixer_at(uint32_t id) {
    if (id >= mixers_.size()) throw Error(ErrorKind::usage, "no mixer " + std::to_string(id));
    return *mixers_[id];
  }

  void load(wire::Reader& r) {
    lra::Mixer& mixer = mixer_at(r.u32());
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
  }

  void forward(wire::Reader& r, wire::Writer& w) {
    lra::Mixer& mixer = mixer_at(r.u32());
    const bool training = r.u8() != 0, autocast = r.u8() != 0;
    const at::Tensor x = r.tensor(kMaxTensorElements).to(device_);
    at::Tensor mask;
    if (r.u8()) mask = r.tensor(kMaxTensorElements).to(device_);
    mixer.train(training);
    torch::NoGradGuard no_grad;
    CudaBf16Autocast bf16(autocast && device_.is_cuda());
    const at::Tensor y = mixer.forward(x, mask);
    w.tensor(y);
  }

  MixerServerOptions o_;
  torch::Device device_;
  const LoadedPlugin* plugin_ = nullptr;
  std::vector<std::shared_ptr<lra::Mixer>> mixers_;
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
