// lra/status.h — how errors cross the plugin boundary: every call into a
// plugin's interface is noexcept and returns a Status; the SDK's wrappers
// turn exceptions thrown inside the plugin into a Status with the message.
#pragma once

#include <string>
#include <utility>

namespace lra {
inline namespace v1 {

// The category decides the host's exit code (see docs/cli.md).
enum class ErrorKind : int {
  none = 0,
  internal = 1,  // a bug or unexpected failure
  usage = 2,     // the user asked for something that does not exist
  plugin = 3,    // the plugin is unusable (ABI, build facts, contract broken)
  rules = 4,     // manifest, options or parameter budget violated
  data = 5,      // data missing or malformed
  // 6 is not a kind: it is the exit code of a crash inside plugin code.
  memory = 7,    // an allocation failed or a size is beyond what can be allocated
  storage = 8,   // an output could not be written (disk full, read-only, permission)
};

struct Status {
  ErrorKind kind = ErrorKind::none;
  std::string message;

  bool ok() const { return kind == ErrorKind::none; }
  static Status Ok() { return {}; }
  static Status Error(ErrorKind k, std::string msg) { return {k, std::move(msg)}; }
};

// Thrown inside plugin code (or host code) to report a categorised error;
// the SDK's boundary wrappers convert it into a Status.
class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
  std::string message_;
};

// Runs `fn` and converts any exception into a Status (used at the boundary).
template <class Fn>
Status guarded(Fn&& fn) noexcept {
  try {
    fn();
    return Status::Ok();
  } catch (const Error& e) {
    return Status::Error(e.kind(), e.what());
  } catch (const std::exception& e) {
    return Status::Error(ErrorKind::internal, e.what());
  } catch (...) {
    return Status::Error(ErrorKind::internal, "unknown exception");
  }
}

}  // namespace v1
}  // namespace lra
