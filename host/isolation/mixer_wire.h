// The wire between the verifier and the confined mixer process
// (isolation/mixer_process.h, isolation/mixer_server.h): framed
// messages over a Unix socket, each an operation code and a body of plain
// little-endian fields and raw tensors. Nothing richer (no pickle, no JSON
// from the confined side): every read is bounded and checked, and a bad
// message is an error in the verifier's own words, never its bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

#include "lra/mixer.h"
#include "lra/status.h"

namespace lra::host::wire {

enum class Op : uint32_t {
  hello = 1,     // -> the plugin's description (name, ABI, capabilities, options, identity)
  create = 2,    // spec, options, generator state -> id, tensors, hints, generator state
  load = 3,      // id, tensors -> ok
  forward = 4,   // id, training, autocast, grad, x, mask -> output (grad: and the call's id)
  backward = 5,  // call id, output gradient -> input gradient, each trainable parameter's gradient
  release = 6,   // call ids, mixer ids the host no longer needs -> ok
  decode_start = 7,  // id, batch, dtype -> the state's tensors (lra::Mixer::decode_start, SDK 1.3)
  decode_step = 8,   // id, position, x_t, the state's tensors -> y_t, the state's tensors
  ok = 100,
  error = 101,  // body: the lra::ErrorKind code only (the text goes to the process's own log)
};

// A received body: its bytes in a 64-byte aligned buffer, which the tensors
// read from it share (no copy; they keep it alive).
class Body {
 public:
  Body() = default;
  explicit Body(size_t bytes);  // uninitialised
  explicit Body(const std::string& bytes);
  char* data() { return buf_.get(); }
  const char* data() const { return buf_.get(); }
  size_t size() const { return size_; }
  const std::shared_ptr<char>& owner() const { return buf_; }

 private:
  std::shared_ptr<char> buf_;
  size_t size_ = 0;
};

struct Message {
  Op op;
  Body body;
};

// Both ends of a new channel (socketpair), with socket buffers sized for
// tensors of megabytes (fewer round trips than the default ~200 KB).
void make_channel(int fds[2]);

class Writer;

// A tensor's place in the mixer's module tree and whether it is a parameter.
struct NamedTensor {
  std::string name;
  bool parameter = true;  // else a buffer; a parameter's requires_grad crosses with it
  at::Tensor tensor;
};

// Every parameter and buffer of `m`, module by module in registration order
// (each module's own tensors, then its children's): the order and names the
// verifier rebuilds a mixer's module tree from, and the list either side
// sends or compares.
std::vector<NamedTensor> module_tensors(const torch::nn::Module& m);

// Each tensor's storage and in-place version, in order: a tensor changed
// when either did (loading, moving, an optimizer step, a redraw in forward).
using TensorMarks = std::vector<std::pair<const void*, int64_t>>;
TensorMarks tensor_marks(const std::vector<NamedTensor>& ts);

// One message; a channel the other side closed is Error(plugin).
void send_message(int fd, Op op, const Writer& body);
void send_message(int fd, Op op, const std::string& body);

// No message within the time limit (an Error(plugin) the caller can tell apart).
struct ChannelTimeout : Error {
  ChannelTimeout() : Error(ErrorKind::plugin, "the mixer process did not answer within its time limit") {}
};

// The next message; nullopt when the other side closed the channel before one
// began. A body over `max_bytes` or a frame cut short is Error(plugin) saying
// which; a wait past `timeout_ms` (-1: none) is ChannelTimeout.
std::optional<Message> receive_message(int fd, uint64_t max_bytes, int timeout_ms);


// A body: small fields copied, tensors' bytes referenced (sent from their own
// memory, each starting at a 64-byte aligned offset of the body).
class Writer {
 public:
  void u8(uint8_t v) { raw(&v, 1); }
  void u32(uint32_t v) { raw(&v, 4); }
  void i64(int64_t v) { raw(&v, 8); }
  void f64(double v) { raw(&v, 8); }
  void str(const std::string& s);
  void tensor(const at::Tensor& t);  // any device and layout; sent contiguous from the CPU
  void tensors(const std::vector<NamedTensor>& ts);
  void state(const std::vector<at::Tensor>& ts);  // a decoding state: a count, then each tensor or "undefined"
  void spec(const lra::MixerSpec& s);  // every field of the SDK's MixerSpec
  size_t size() const { return out_.size() + referenced_; }
  std::string flat() const;  // the whole body as bytes (tests, small messages)
  // The body's bytes in order, as runs of the copied fields and the tensors' own memory.
  void for_each_segment(const std::function<void(const char*, size_t)>& fn) const;

 private:
  // The body in order: a copied run of out_, then a tensor's bytes, ...
  struct Span {
    size_t end;        // out_ up to here comes before the tensor
    at::Tensor tensor;  // contiguous, on the CPU
  };
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
  std::vector<Span> spans_;
  size_t referenced_ = 0;
};

// Reads a body; any field past its end or over its bound is Error(plugin)
// naming `what` (the message it reads, in the verifier's words).
class Reader {
 public:
  Reader(Body body, std::string what) : b_(std::move(body)), what_(std::move(what)) {}
  Reader(const std::string& body, std::string what) : b_(body), what_(std::move(what)) {}
  uint8_t u8();
  uint32_t u32();
  int64_t i64();
  double f64();
  std::string str(size_t max_bytes);
  // A tensor of at most `max_elements` elements, on the CPU.
  at::Tensor tensor(int64_t max_elements);
  std::vector<NamedTensor> tensors(size_t max_count, int64_t max_elements);
  std::vector<at::Tensor> state(size_t max_count, int64_t max_elements);
  lra::MixerSpec spec();
  void end() const;  // nothing may follow the last field

 private:
  const char* take(size_t n);
  [[noreturn]] void bad(const std::string& why) const;
  Body b_;
  size_t at_ = 0;
  std::string what_;
};

}  // namespace lra::host::wire
