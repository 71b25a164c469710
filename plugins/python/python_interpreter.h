// The Python plugin's embedded interpreter (python_plugin.cpp): starting
// CPython inside the host once, the `lrahost` module a mixer may import (the
// host's dropout and softmax attention), errors as one line, and the torch
// settings Python code must not leave changed for the whole host. Internal to
// the plugin.
#pragma once

#include <string>

#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>
#include <pybind11/embed.h>
#include <torch/csrc/autograd/python_variable.h>

#include <lra/status.h>

namespace lra_python {

namespace py = pybind11;

// lra_python_bridge (lra_python_bridge.py), once the interpreter has started.
extern py::module_* bridge;

// Starts the interpreter once (the GIL released afterwards); Error(plugin) if it cannot.
void ensure_interpreter();

// The exception as one line (lra_python_bridge.format_exception). The
// traceback is passed on: an exception raised in a frame that C++ called
// directly (the class's __init__ or forward) does not hold it itself.
// `file`: the class's file, whose folder's frames name where it happened.
std::string error_text(py::error_already_set& e, const std::string& what, const std::string& file = "");

inline py::object wrap(const at::Tensor& t) { return py::reinterpret_steal<py::object>(THPVariable_Wrap(t)); }
inline bool is_tensor(const py::handle& h) { return THPVariable_Check(h.ptr()); }

// What Python code can change in LibTorch for the whole host, not just for
// itself: the default dtype (torch.set_default_dtype: the host's model would
// be built, and trained, in another precision than the run records) and this
// thread's grad mode (torch.set_grad_enabled(False) left on: the host's
// training gets no gradients). Taken before a call into the class, checked
// after (the GIL held): a change is put back and refused, naming it.
class TorchState {
 public:
  TorchState() : dtype_(c10::get_default_dtype()), grad_(c10::GradMode::is_enabled()) {}
  // Puts back what changed; returns what that was ("" when nothing did).
  std::string restore() const {
    std::string changed;
    if (c10::get_default_dtype() != dtype_) {
      changed = "torch's default dtype (torch.set_default_dtype(" +
                py::str(py::module_::import("torch").attr("get_default_dtype")()).cast<std::string>() +
                ")); create tensors with x's dtype instead";
      c10::set_default_dtype(dtype_);
    }
    if (c10::GradMode::is_enabled() != grad_) {
      changed += std::string(changed.empty() ? "" : ", and ") + "the grad mode (torch.set_grad_enabled(" +
                 (grad_ ? "False" : "True") + ") left in effect); use `with torch.no_grad():` for a block instead";
      c10::GradMode::set_enabled(grad_);
    }
    return changed;
  }
  // restore(), then throws naming `what` if anything had changed.
  void check(const std::string& what) const {
    const std::string changed = restore();
    if (!changed.empty())
      throw lra::Error(lra::ErrorKind::plugin, what + " changed " + changed + ": the host's settings are not a "
                                                      "mixer's to change");
  }

 private:
  caffe2::TypeMeta dtype_;
  bool grad_;
};

}  // namespace lra_python
