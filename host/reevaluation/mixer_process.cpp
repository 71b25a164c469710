#include "reevaluation/mixer_process.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "lra/status.h"
#include "reevaluation/mixer_limits.h"
#include "train/autocast.h"

namespace lra::host {
namespace fs = std::filesystem;
using wire::Op;

namespace {

std::string error_kind_words(uint32_t kind) {
  switch (static_cast<ErrorKind>(kind)) {
    case ErrorKind::usage: return "a request it refused";
    case ErrorKind::plugin: return "a plugin fault";
    case ErrorKind::rules: return "a rule the plugin broke";
    case ErrorKind::data: return "a data error";
    case ErrorKind::memory: return "an allocation that failed";
    default: return "an error";
  }
}

// A stand-in for one block's mixer inside the verifier's model.
class RemoteMixer final : public lra::Mixer {
 public:
  RemoteMixer(MixerProcess& process, MixerProcess::Created created)
      : process_(process), id_(created.id), hints_(std::move(created.hints)) {
    for (auto& nt : created.tensors) add(nt);
    remember_pushed();  // the process holds these very values already
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    push_if_changed();
    const bool autocast = x.is_cuda() && CudaBf16Autocast::active();
    at::Tensor out = process_.forward(id_, x, mask, is_training(), autocast);
    if (out.sizes() != x.sizes() || !out.is_floating_point())
      throw Error(ErrorKind::plugin, "the mixer process answered a forward call with a tensor of another shape than "
                                     "its input, or not of floating point");
    return out.to(x.device());
  }

  std::vector<lra::ParamHint> optimizer_hints() const override { return hints_; }

 private:
  // Registers a tensor under its dotted name, making the modules on the way.
  void add(const wire::NamedTensor& nt) {
    torch::nn::Module* at = this;
    std::string rest = nt.name;
    for (size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1)) {
      const std::string part = rest.substr(0, dot);
      if (part.empty()) throw Error(ErrorKind::plugin, "the mixer process named a tensor with an empty path part");
      std::shared_ptr<torch::nn::Module> child;
      for (const auto& c : at->named_children())
        if (c.key() == part) child = c.value();
      if (!child) child = at->register_module(part, std::make_shared<torch::nn::Module>());
      at = child.get();
    }
    try {
      if (nt.parameter) at->register_parameter(rest, nt.tensor, nt.tensor.requires_grad());
      else at->register_buffer(rest, nt.tensor);
    } catch (const c10::Error&) {
      throw Error(ErrorKind::plugin, "the mixer process named two tensors alike, or one by a name a module cannot hold");
    }
  }

  // A tensor changed when its storage or its in-place version did (loading
  // model.pt, moving the model, the summary probe's re-initialisation).
  std::vector<std::pair<const void*, int64_t>> marks() const {
    std::vector<std::pair<const void*, int64_t>> m;
    for (const auto& nt : wire::module_tensors(*this)) m.emplace_back(nt.tensor.data_ptr(), nt.tensor._version());
    return m;
  }
  void remember_pushed() { pushed_ = marks(); }
  void push_if_changed() {
    if (marks() == pushed_) return;
    process_.load(id_, wire::module_tensors(*this));
    remember_pushed();
  }

  MixerProcess& process_;
  uint32_t id_;
  std::vector<lra::ParamHint> hints_;
  std::vector<std::pair<const void*, int64_t>> pushed_;
};

}  // namespace

MixerProcess::MixerProcess(const MixerProcessOptions& o) : o_(o) {
  int pair[2];
  wire::make_channel(pair);
  channel_ = pair[0];
  const std::vector<std::string> argv = {o.exe,      "mixer-server", "--plugin", o.plugin,
                                         "--device", o.device,       "--threads", std::to_string(o.threads)};
  SandboxMounts mounts;
  mounts.read_only = o.read_only;
  // Its BLAS workers sleep right after a call instead of spinning ~0.1 s on a
  // core the verifier needs next (OpenBLAS: 2^4 cycles; measured in bench/isolation).
  SandboxLimits limits = o.limits;
  limits.env.emplace("OPENBLAS_THREAD_TIMEOUT", "4");
  process_ = std::make_unique<SandboxProcess>(argv, o.scratch, limits, mounts, o.sandboxed, pair[1]);
  close(pair[1]);  // the process holds its own copy; its end closes the channel
}

void MixerProcess::open() {
  const auto start = std::chrono::steady_clock::now();
  wire::Writer w;
  const wire::Message m = call(Op::hello, w, "open the plugin");
  wire::Reader r(m.body, "answer to hello");
  name_ = r.str(4096);
  abi_minor_ = r.u32();
  r.end();
  open_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

MixerProcess::~MixerProcess() {
  if (channel_ >= 0) close(channel_);
  if (process_) process_->kill_now();
}

void MixerProcess::fail(const std::string& why) {
  broken_ = true;
  broken_why_ = why;
  outcome_ = process_->kill_now();
  throw Error(ErrorKind::plugin, why);
}

wire::Message MixerProcess::call(Op op, const wire::Writer& body, const std::string& what) {
  if (broken_) throw Error(ErrorKind::plugin, broken_why_);
  const auto start = std::chrono::steady_clock::now();
  // How the process ended, once it has (a closed channel: it is ending).
  auto end = [&](const std::string& otherwise) {
    for (int i = 0; i < 40 && !process_->finished(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return process_->finished() ? process_->finish().describe() : otherwise;
  };
  std::optional<wire::Message> answer;
  try {
    wire::send_message(channel_, op, body);
    answer = wire::receive_message(channel_, kMaxAnswerBytes,
                                    static_cast<int>(std::min<int64_t>(int64_t{o_.call_timeout_seconds} * 1000, 1 << 30)));
  } catch (const wire::ChannelTimeout&) {
    fail("the mixer process did not " + what + " within the call time limit of " +
         std::to_string(o_.call_timeout_seconds) + " s");
  } catch (const Error& e) {
    // A closed channel: the process ended (or broke its end of the protocol).
    fail("the mixer process failed to " + what + " (" + end(e.what()) + ")");
  }
  stats_.calls += 1;
  stats_.bytes += body.size() + (answer ? answer->body.size() : 0);
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!answer) fail("the mixer process ended before it could " + what + " (" + end("it closed its channel") + ")");
  if (answer->op == Op::error) {
    uint32_t kind = 0;
    if (answer->body.size() == 4) std::memcpy(&kind, answer->body.data(), 4);
    // Its message is the judged code's text: only the kind is used here.
    throw Error(ErrorKind::plugin, "the mixer process could not " + what + ": " + error_kind_words(kind));
  }
  if (answer->op != Op::ok) fail("the mixer process answered with an unknown message");
  return std::move(*answer);
}

MixerProcess::Created MixerProcess::create(const lra::MixerSpec& spec, const std::map<std::string, std::string>& options) {
  auto gen = at::detail::getDefaultCPUGenerator();
  wire::Writer w;
  w.u32(static_cast<uint32_t>(options.size()));
  for (const auto& [k, v] : options) w.str(k), w.str(v);
  w.spec(spec);
  at::Tensor before;
  {
    const std::lock_guard<std::mutex> lock(gen.mutex());
    before = gen.get_state();
  }
  w.tensor(before);
  const wire::Message m = call(Op::create, w, "create the mixer of block " + std::to_string(spec.layer_index));
  wire::Reader r(m.body, "answer to create");
  Created c;
  c.id = r.u32();
  c.tensors = r.tensors(kMaxMixerTensors, kMaxTensorElements);
  for (uint32_t n = r.u32(), i = 0; i < n; ++i) {
    lra::ParamHint h;
    h.name = r.str(1024);
    h.no_weight_decay = r.u8() != 0;
    h.lr_scale = r.f64();
    h.lr_max = r.f64();
    c.hints.push_back(std::move(h));
  }
  const at::Tensor after = r.tensor(before.numel());
  r.end();
  if (after.scalar_type() != before.scalar_type() || !after.sizes().equals(before.sizes()))
    fail("the mixer process answered create with a random-generator state of another form");
  try {
    const std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(after);
  } catch (const c10::Error&) {
    fail("the mixer process answered create with a random-generator state that is not one");
  }
  return c;
}

void MixerProcess::load(uint32_t id, const std::vector<wire::NamedTensor>& tensors) {
  wire::Writer w;
  w.u32(id);
  w.tensors(tensors);
  const wire::Message m = call(Op::load, w, "take the mixer's tensors");
  wire::Reader(m.body, "answer to load").end();
}

at::Tensor MixerProcess::forward(uint32_t id, const at::Tensor& x, const at::Tensor& mask, bool training, bool autocast) {
  wire::Writer w;
  w.u32(id);
  w.u8(training ? 1 : 0);
  w.u8(autocast ? 1 : 0);
  w.tensor(x);
  w.u8(mask.defined() ? 1 : 0);
  if (mask.defined()) w.tensor(mask);
  const wire::Message m = call(Op::forward, w, "answer a forward call");
  wire::Reader r(m.body, "answer to forward");
  at::Tensor out = r.tensor(x.numel());
  r.end();
  return out;
}

SandboxOutcome MixerProcess::stop() {
  if (channel_ >= 0) close(channel_), channel_ = -1;
  if (!outcome_) {
    for (int i = 0; i < 200 && !process_->finished(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    outcome_ = process_->finished() ? process_->finish() : process_->kill_now();
  }
  return *outcome_;
}

std::string MixerProcess::log_tail() {
  if (!outcome_) stop();
  return outcome_->log_tail;
}

MixerFactory remote_mixer_factory(MixerProcess& process, const std::map<std::string, std::string>& options) {
  return [&process, options](const lra::MixerSpec& spec) -> std::shared_ptr<lra::Mixer> {
    return std::make_shared<RemoteMixer>(process, process.create(spec, options));
  };
}

}  // namespace lra::host
