#include "isolation/mixer_wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <new>

#include <ATen/ATen.h>

#include "lra/status.h"

namespace lra::host::wire {

namespace {

constexpr uint32_t kMagic = 0x4d41524cu;  // "LRAM"
constexpr size_t kMaxDims = 8;
constexpr size_t kAlign = 64;  // a tensor's bytes start at a multiple of this in the body

size_t padding(size_t offset) { return (kAlign - offset % kAlign) % kAlign; }

void send_all(int fd, const char* p, size_t n) {
  size_t sent = 0;
  while (sent < n) {
    // MSG_NOSIGNAL: a closed peer is an error here, not a SIGPIPE that ends the verifier.
    const ssize_t k = ::send(fd, p + sent, n - sent, MSG_NOSIGNAL);
    if (k > 0) sent += static_cast<size_t>(k);
    else if (k < 0 && errno == EINTR) continue;
    else throw Error(ErrorKind::plugin, std::string("the mixer channel is closed (") +
                                             (k < 0 ? std::strerror(errno) : "no progress") + ")");
  }
}

// The dtypes a mixer's tensors and outputs may have, by wire code.
constexpr at::ScalarType kTypes[] = {at::kFloat, at::kDouble, at::kBFloat16, at::kHalf, at::kLong,
                                     at::kInt,   at::kShort,  at::kChar,     at::kByte, at::kBool};

uint8_t type_code(at::ScalarType t) {
  for (uint8_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; ++i)
    if (kTypes[i] == t) return i;
  throw Error(ErrorKind::plugin, std::string("a mixer tensor of dtype ") + c10::toString(t) +
                                     " cannot cross to the mixer process (float, integer and bool tensors only)");
}

// Waits until `fd` is readable or the deadline passes (Error(plugin)).
void wait_readable(int fd, std::chrono::steady_clock::time_point deadline, bool timed) {
  for (;;) {
    int ms = -1;
    if (timed) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw ChannelTimeout();
      ms = static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
    }
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, ms);
    if (r > 0) return;
    if (r < 0 && errno != EINTR) throw Error(ErrorKind::plugin, std::string("poll on the mixer channel: ") + std::strerror(errno));
  }
}

// Reads exactly n bytes; false at the end of the channel before the first byte.
bool read_exact(int fd, char* p, size_t n, std::chrono::steady_clock::time_point deadline, bool timed) {
  size_t got = 0;
  while (got < n) {
    wait_readable(fd, deadline, timed);
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r > 0) got += static_cast<size_t>(r);
    else if (r == 0) {
      if (got == 0) return false;
      throw Error(ErrorKind::plugin, "the mixer channel ended inside a message");
    } else if (errno != EINTR && errno != EAGAIN) {
      throw Error(ErrorKind::plugin, std::string("reading the mixer channel: ") + std::strerror(errno));
    }
  }
  return true;
}

}  // namespace

void make_channel(int fds[2]) {
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw Error(ErrorKind::storage, std::string("cannot make the mixer process's channel: ") + std::strerror(errno));
  const int size = 8 << 20;  // capped by net.core.wmem_max unless the verifier may force it (root)
  for (int i = 0; i < 2; ++i)
    for (int opt : {SO_SNDBUF, SO_RCVBUF})
      if (setsockopt(fds[i], SOL_SOCKET, opt == SO_SNDBUF ? SO_SNDBUFFORCE : SO_RCVBUFFORCE, &size, sizeof size) != 0)
        setsockopt(fds[i], SOL_SOCKET, opt, &size, sizeof size);
}

Body::Body(size_t bytes)
    : buf_(static_cast<char*>(::operator new(bytes ? bytes : 1, std::align_val_t(kAlign))),
           [](char* p) { ::operator delete(p, std::align_val_t(kAlign)); }),
      size_(bytes) {}

Body::Body(const std::string& bytes) : Body(bytes.size()) {
  if (!bytes.empty()) std::memcpy(buf_.get(), bytes.data(), bytes.size());
}

namespace {

// A frame's header: magic, operation, the body's length.
void send_head(int fd, Op op, uint64_t size) {
  char head[16];
  const uint32_t words[2] = {kMagic, static_cast<uint32_t>(op)};
  std::memcpy(head, words, 8);
  std::memcpy(head + 8, &size, 8);
  send_all(fd, head, sizeof head);
}

}  // namespace

void send_message(int fd, Op op, const Writer& body) {
  send_head(fd, op, body.size());
  body.for_each_segment([&](const char* p, size_t n) { send_all(fd, p, n); });
}

void send_message(int fd, Op op, const std::string& body) {
  send_head(fd, op, body.size());
  send_all(fd, body.data(), body.size());
}

std::optional<Message> receive_message(int fd, uint64_t max_bytes, int timeout_ms) {
  const bool timed = timeout_ms >= 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timed ? timeout_ms : 0);
  char head[16];
  if (!read_exact(fd, head, sizeof head, deadline, timed)) return std::nullopt;
  uint32_t magic = 0, op = 0;
  uint64_t size = 0;
  std::memcpy(&magic, head, 4);
  std::memcpy(&op, head + 4, 4);
  std::memcpy(&size, head + 8, 8);
  if (magic != kMagic) throw Error(ErrorKind::plugin, "the mixer channel carried something that is not a message");
  if (size > max_bytes)
    throw Error(ErrorKind::plugin, "a message on the mixer channel announces " + std::to_string(size) +
                                       " bytes, over its bound of " + std::to_string(max_bytes));
  Message m{static_cast<Op>(op), Body(size)};
  if (size > 0 && !read_exact(fd, m.body.data(), size, deadline, timed))
    throw Error(ErrorKind::plugin, "the mixer channel ended inside a message");
  return m;
}

void Writer::str(const std::string& s) {
  i64(static_cast<int64_t>(s.size()));
  raw(s.data(), s.size());
}

void Writer::tensor(const at::Tensor& t_in) {
  const at::Tensor t = t_in.detach().to(at::kCPU).contiguous();
  u8(type_code(t.scalar_type()));
  u8(static_cast<uint8_t>(t.dim()));
  for (int64_t d : t.sizes()) i64(d);
  out_.append(padding(size()), '\0');
  if (t.nbytes() == 0) return;
  spans_.push_back({out_.size(), t});
  referenced_ += t.nbytes();
}

void Writer::for_each_segment(const std::function<void(const char*, size_t)>& fn) const {
  size_t from = 0;
  for (const auto& span : spans_) {
    fn(out_.data() + from, span.end - from);
    fn(static_cast<const char*>(span.tensor.data_ptr()), span.tensor.nbytes());
    from = span.end;
  }
  fn(out_.data() + from, out_.size() - from);
}

std::string Writer::flat() const {
  std::string all;
  all.reserve(size());
  for_each_segment([&](const char* p, size_t n) { all.append(p, n); });
  return all;
}

TensorMarks tensor_marks(const std::vector<NamedTensor>& ts) {
  TensorMarks m;
  for (const auto& nt : ts) m.emplace_back(nt.tensor.data_ptr(), nt.tensor._version());
  return m;
}

std::vector<NamedTensor> module_tensors(const torch::nn::Module& m) {
  std::vector<NamedTensor> out;
  auto own = [&](const torch::nn::Module& module, const std::string& prefix) {
    for (const auto& p : module.named_parameters(/*recurse=*/false)) out.push_back({prefix + p.key(), true, p.value()});
    for (const auto& b : module.named_buffers(/*recurse=*/false)) out.push_back({prefix + b.key(), false, b.value()});
  };
  // Not named_modules(include_self): that needs `m` held by a shared_ptr,
  // which a module under construction (RemoteMixer) is not yet.
  own(m, "");
  for (const auto& item : m.named_modules("", /*include_self=*/false)) own(*item.value(), item.key() + ".");
  return out;
}

void Writer::tensors(const std::vector<NamedTensor>& ts) {
  u32(static_cast<uint32_t>(ts.size()));
  for (const auto& nt : ts) {
    str(nt.name);
    u8(nt.parameter ? (nt.tensor.requires_grad() ? 1 : 2) : 0);
    tensor(nt.tensor);
  }
}

void Writer::state(const std::vector<at::Tensor>& ts) {
  u32(static_cast<uint32_t>(ts.size()));
  for (const auto& t : ts) {
    u8(t.defined() ? 1 : 0);
    if (t.defined()) tensor(t);
  }
}

// The one place MixerSpec's fields are listed for the wire: a field added to
// the SDK's struct changes its size and stops the build here until it is sent.
static_assert(sizeof(lra::MixerSpec) == 9 * 8, "lra::MixerSpec changed: send its new field in Writer::spec and "
                                                "read it in Reader::spec");

void Writer::spec(const lra::MixerSpec& s) {
  i64(s.d_model);
  i64(s.heads);
  i64(s.qkv_dim);
  i64(s.max_len);
  u8(s.causal ? 1 : 0);
  f64(s.attention_dropout);
  i64(s.layer_index);
  i64(static_cast<int64_t>(s.seed));
  f64(s.rotary_base);
}

lra::MixerSpec Reader::spec() {
  lra::MixerSpec s;
  s.d_model = i64();
  s.heads = i64();
  s.qkv_dim = i64();
  s.max_len = i64();
  s.causal = u8() != 0;
  s.attention_dropout = f64();
  s.layer_index = i64();
  s.seed = static_cast<uint64_t>(i64());
  s.rotary_base = f64();
  return s;
}

void Reader::bad(const std::string& why) const {
  throw Error(ErrorKind::plugin, "the mixer process sent a malformed " + what_ + " (" + why + ")");
}

const char* Reader::take(size_t n) {
  if (at_ > b_.size() || n > b_.size() - at_) bad("it ends early");
  const char* p = b_.data() + at_;
  at_ += n;
  return p;
}

uint8_t Reader::u8() { return static_cast<uint8_t>(*take(1)); }
uint32_t Reader::u32() {
  uint32_t v;
  std::memcpy(&v, take(4), 4);
  return v;
}
int64_t Reader::i64() {
  int64_t v;
  std::memcpy(&v, take(8), 8);
  return v;
}
double Reader::f64() {
  double v;
  std::memcpy(&v, take(8), 8);
  return v;
}

std::string Reader::str(size_t max_bytes) {
  const int64_t n = i64();
  if (n < 0 || static_cast<uint64_t>(n) > max_bytes) bad("a string over " + std::to_string(max_bytes) + " bytes");
  const char* p = take(static_cast<size_t>(n));
  return std::string(p, static_cast<size_t>(n));
}

at::Tensor Reader::tensor(int64_t max_elements) {
  const uint8_t code = u8();
  if (code >= sizeof kTypes / sizeof kTypes[0]) bad("an unknown dtype");
  const size_t dims = u8();
  if (dims > kMaxDims) bad("a tensor of more than " + std::to_string(kMaxDims) + " dimensions");
  std::vector<int64_t> sizes;
  int64_t elements = 1;
  for (size_t i = 0; i < dims; ++i) {
    const int64_t d = i64();
    if (d < 0 || (d > 0 && elements > max_elements / d)) bad("a tensor over " + std::to_string(max_elements) + " elements");
    elements *= d;
    sizes.push_back(d);
  }
  (void)take(padding(at_));
  // The tensor shares the body's buffer (aligned, kept alive by the tensor).
  // A bool is read as a byte and compared: any other byte than 0 or 1 in a
  // bool tensor is undefined behaviour.
  const bool boolean = kTypes[code] == at::kBool;
  const auto options = at::TensorOptions().dtype(boolean ? at::kByte : kTypes[code]);
  const size_t bytes = static_cast<size_t>(elements) * at::elementSize(boolean ? at::kByte : kTypes[code]);
  if (bytes == 0) return at::empty(sizes, options.dtype(kTypes[code]));
  char* data = const_cast<char*>(take(bytes));
  std::shared_ptr<char> owner = b_.owner();
  at::Tensor t = at::from_blob(data, sizes, [owner](void*) mutable { owner.reset(); }, options);
  return boolean ? t.ne(0) : t;
}

std::vector<at::Tensor> Reader::state(size_t max_count, int64_t max_elements) {
  const uint32_t n = u32();
  if (n > max_count) bad("a decoding state of more than " + std::to_string(max_count) + " tensors");
  std::vector<at::Tensor> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(u8() ? tensor(max_elements) : at::Tensor());
  return out;
}

std::vector<NamedTensor> Reader::tensors(size_t max_count, int64_t max_elements) {
  const uint32_t n = u32();
  if (n > max_count) bad("more than " + std::to_string(max_count) + " tensors");
  std::vector<NamedTensor> out;
  for (uint32_t i = 0; i < n; ++i) {
    NamedTensor nt;
    nt.name = str(1024);
    const uint8_t kind = u8();  // 0 buffer, 1 trained parameter, 2 parameter without gradient
    if (kind > 2) bad("an unknown tensor kind");
    nt.parameter = kind != 0;
    nt.tensor = tensor(max_elements);
    if (kind == 1 && nt.tensor.is_floating_point()) nt.tensor.requires_grad_(true);
    out.push_back(std::move(nt));
  }
  return out;
}

void Reader::end() const {
  if (at_ != b_.size()) bad("bytes follow its last field");
}

}  // namespace lra::host::wire
