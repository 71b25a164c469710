#include "isolation/mixer_process.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "lra/dropout.h"
#include "model/random_state.h"
#include "lra/status.h"
#include "isolation/mixer_limits.h"
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
  description_ = read_description(r);
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

void MixerProcess::release_later(int64_t call) {
  const std::lock_guard<std::mutex> lock(release_mutex_);
  released_calls_.push_back(call);
}

void MixerProcess::drop_later(uint32_t mixer) {
  const std::lock_guard<std::mutex> lock(release_mutex_);
  dropped_mixers_.push_back(mixer);
}

wire::Message MixerProcess::call(Op op, const wire::Writer& body, const std::string& what) {
  if (broken_) throw Error(ErrorKind::plugin, broken_why_);
  if (op != Op::release) {
    wire::Writer w;
    {
      const std::lock_guard<std::mutex> lock(release_mutex_);
      if (!released_calls_.empty() || !dropped_mixers_.empty()) {
        w.u32(static_cast<uint32_t>(released_calls_.size()));
        for (int64_t c : released_calls_) w.i64(c);
        w.u32(static_cast<uint32_t>(dropped_mixers_.size()));
        for (uint32_t m : dropped_mixers_) w.u32(m);
        released_calls_.clear();
        dropped_mixers_.clear();
      }
    }
    if (w.size() > 0) wire::Reader(call(Op::release, w, "let go of what the host dropped").body, "answer to release").end();
  }
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

// The run's CPU generator continues from where the process left it (its
// mixer drew from it); a lie only changes the host's later draws.
void MixerProcess::continue_generator(const at::Tensor& before, const at::Tensor& after, const std::string& what) {
  if (after.scalar_type() != before.scalar_type() || !after.sizes().equals(before.sizes()))
    fail("the mixer process answered " + what + " with a random-generator state of another form");
  try {
    set_cpu_generator_state(after);
  } catch (const c10::Error&) {
    fail("the mixer process answered " + what + " with a random-generator state that is not one");
  }
}

MixerProcess::Created MixerProcess::create(const lra::MixerSpec& spec, const std::map<std::string, std::string>& options) {
  wire::Writer w;
  w.u32(static_cast<uint32_t>(options.size()));
  for (const auto& [k, v] : options) w.str(k), w.str(v);
  w.spec(spec);
  const at::Tensor before = cpu_generator_state();
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
  c.decodes = r.u8() != 0;
  continue_generator(before, r.tensor(before.numel()), "create");
  r.end();
  return c;
}

std::vector<at::Tensor> MixerProcess::decode_start(uint32_t id, int64_t batch, bool float64) {
  wire::Writer w;
  w.u32(id);
  w.i64(batch);
  w.u8(float64 ? 1 : 0);
  const wire::Message m = call(Op::decode_start, w, "start decoding");
  wire::Reader r(m.body, "answer to decode_start");
  std::vector<at::Tensor> state = r.state(kMaxMixerTensors, kMaxTensorElements);
  r.end();
  return state;
}

at::Tensor MixerProcess::decode_step(uint32_t id, const at::Tensor& x, std::vector<at::Tensor>& state,
                                     int64_t position) {
  wire::Writer w;
  w.u32(id);
  w.i64(position);
  w.tensor(x);
  w.state(state);
  const wire::Message m = call(Op::decode_step, w, "answer a decoding step");
  wire::Reader r(m.body, "answer to decode_step");
  at::Tensor y = r.tensor(x.numel());
  if (!y.sizes().equals(x.sizes()) || !y.is_floating_point())
    throw Error(ErrorKind::plugin, "the mixer process answered a decoding step with a tensor of another shape than "
                                   "its input, or not of floating point");
  state = r.state(kMaxMixerTensors, kMaxTensorElements);
  r.end();
  return y;
}

void MixerProcess::load(uint32_t id, const std::vector<wire::NamedTensor>& tensors) {
  wire::Writer w;
  w.u32(id);
  w.tensors(tensors);
  const wire::Message m = call(Op::load, w, "take the mixer's tensors");
  wire::Reader(m.body, "answer to load").end();
}

namespace {

// An answer's tensor must have the shape of what it answers for, in floating point.
at::Tensor shaped_like(const at::Tensor& got, const at::Tensor& like, const std::string& what) {
  if (!got.sizes().equals(like.sizes()) || !got.is_floating_point())
    throw Error(ErrorKind::plugin, "the mixer process answered " + what + " with a tensor of another shape than " +
                                       "it should have, or not of floating point");
  return got;
}

}  // namespace

MixerProcess::Answer MixerProcess::forward(uint32_t id, const at::Tensor& x, const at::Tensor& mask,
                                           const Forward& how) {
  wire::Writer w;
  w.u32(id);
  w.u8(how.training ? 1 : 0);
  w.u8(how.autocast ? 1 : 0);
  w.u8(how.grad ? 1 : 0);
  w.u8(how.record ? 1 : 0);
  w.tensor(x);
  w.u8(mask.defined() ? 1 : 0);
  if (mask.defined()) w.tensor(mask);
  const at::Tensor before = cpu_generator_state();
  w.tensor(before);
  // The trainer's description of this forward pass (lra/dropout.h): the
  // mixer's dropout masks are then the ones it would draw in process.
  lra_dropout_rows* rows = lra::ops::detail::active_rows();
  w.u8(rows ? 1 : 0);
  if (rows) {
    w.i64(static_cast<int64_t>(rows->seed));
    w.i64(static_cast<int64_t>(rows->calls));
    w.i64(rows->first);
    w.i64(rows->local);
    w.i64(rows->global);
    w.i64(rows->towers);
  }
  const wire::Message m = call(Op::forward, w, "answer a forward call");
  wire::Reader r(m.body, "answer to forward");
  Answer a;
  a.out = shaped_like(r.tensor(x.numel()), x, "a forward call");
  continue_generator(before, r.tensor(before.numel()), "a forward call");
  if (rows) rows->calls = static_cast<uint64_t>(r.i64());
  const uint32_t n = r.u32();
  if (n > kMaxMixerTensors) fail("the mixer process answered a forward call with too many changed buffers");
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t index = r.u32();
    a.buffers.emplace_back(index, r.tensor(kMaxTensorElements));
  }
  if (how.record && r.u8()) {
    a.probs = r.tensor(kMaxTensorElements);
    const int64_t b = x.size(0), l = x.size(1);
    if (a.probs.dim() != 4 || a.probs.size(0) != b || a.probs.size(2) != l || a.probs.size(3) != l ||
        !a.probs.is_floating_point())
      fail("the mixer process answered with attention probabilities not of shape [B, heads, L, L]");
  }
  if (how.grad) a.call = r.i64();
  r.end();
  return a;
}

MixerProcess::Gradients MixerProcess::backward(int64_t call_id, const at::Tensor& grad_out, const at::Tensor& x,
                                               const std::vector<at::Tensor>& params) {
  wire::Writer w;
  w.i64(call_id);
  w.tensor(grad_out);
  const wire::Message m = call(Op::backward, w, "answer a backward call");
  wire::Reader r(m.body, "answer to backward");
  if (r.u32() != params.size() + 1)
    fail("the mixer process answered a backward call with another number of gradients than the mixer has "
         "trainable parameters");
  Gradients g;
  if (r.u8()) g.x = shaped_like(r.tensor(x.numel()), x, "a backward call");
  for (const auto& p : params) {
    at::Tensor t;
    if (r.u8()) t = shaped_like(r.tensor(p.numel()), p, "a backward call");
    g.params.push_back(t);
  }
  r.end();
  return g;
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

}  // namespace lra::host
