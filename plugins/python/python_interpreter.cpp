#include "python_interpreter.h"

#include <dlfcn.h>
#include <signal.h>

#include <mutex>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>
#include <pybind11/embed.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/python_variable.h>

#include <lra/attention.h>
#include <lra/capabilities.h>
#include <lra/dropout.h>
#include <lra/mixer.h>

#include "plugins/python_bridge.h"
#include "lra_python_bridge_source.h"  // kBridgeSource: lra_python_bridge.py

namespace lra_python {

py::module_* bridge = nullptr;

// The exception as one line (lra_python_bridge.format_exception). The
// traceback is passed on: an exception raised in a frame that C++ called
// directly (the class's __init__ or forward) does not hold it itself.
// `file`: the class's file, whose folder's frames name where it happened.
std::string error_text(py::error_already_set& e, const std::string& what, const std::string& file) {
  try {
    py::object folder = file.empty() ? py::object(py::none())
                                     : py::module_::import("os").attr("path").attr("dirname")(file);
    py::object trace = e.trace() ? py::reinterpret_borrow<py::object>(e.trace()) : py::object(py::none());
    return bridge->attr("format_exception")(e.value(), what, trace, folder).cast<std::string>();
  } catch (...) {
    std::string text = what + " raised " + std::string(e.what());
    for (auto& c : text)
      if (c == '\n') c = ' ';
    return text;
  }
}

namespace {

// The tensor argument `name` of the lrahost function `function`: a
// torch.Tensor, or undefined where None is allowed.
at::Tensor tensor_arg(const char* function, const py::object& o, const char* name, bool optional = false) {
  if (optional && o.is_none()) return {};
  if (!is_tensor(o))
    throw py::type_error(std::string("lrahost.") + function + ": " + name + " must be a torch.Tensor" +
                         (optional ? " or None" : ""));
  return THPVariable_Unpack(o.ptr());
}

// lrahost.softmax_attention: the SDK's lra::ops::softmax_attention, so that a
// Python mixer gets what a C++ one gets from it: LRA's masking, the host's
// split-invariant attention dropout, and on CUDA the fused kernels with small
// head dimensions padded and cuDNN's faulty case avoided.
py::object host_softmax_attention(py::object q, py::object k, py::object v, py::object key_mask, bool causal,
                                  double dropout_p, bool training, py::object query_mask, bool return_probs) {
  const char* fn = "softmax_attention";
  const auto Q = tensor_arg(fn, q, "q"), K = tensor_arg(fn, k, "k"), V = tensor_arg(fn, v, "v");
  const auto key = tensor_arg(fn, key_mask, "key_mask", true), query = tensor_arg(fn, query_mask, "query_mask", true);
  const auto fail = [fn](const std::string& what) { throw py::value_error(std::string("lrahost.") + fn + ": " + what); };
  if (Q.dim() != 4 || K.dim() != 4 || V.dim() != 4)
    fail("q, k and v must be [B, H, L, Dh]; got " + std::to_string(Q.dim()) + ", " + std::to_string(K.dim()) +
         " and " + std::to_string(V.dim()) + " dimensions");
  if (K.sizes().slice(0, 3) != V.sizes().slice(0, 3) || Q.size(0) != K.size(0) || Q.size(1) != K.size(1) ||
      Q.size(3) != K.size(3))
    fail("q, k and v do not fit together (q [B, H, Lq, Dh], k [B, H, Lk, Dh], v [B, H, Lk, Dv])");
  for (const auto& [m, name, length] : {std::tuple{key, "key_mask", K.size(2)}, {query, "query_mask", Q.size(2)}})
    if (m.defined() && (m.scalar_type() != at::kBool || m.dim() != 2 || m.size(0) != Q.size(0) || m.size(1) != length))
      fail(std::string(name) + " must be a bool tensor [B, L] = [" + std::to_string(Q.size(0)) + ", " +
           std::to_string(length) + "] (True = a real token)");
  if (!(dropout_p >= 0.0 && dropout_p < 1.0)) fail("dropout_p must be in [0, 1), got " + std::to_string(dropout_p));
  at::Tensor probs;
  at::Tensor out;
  try {
    out = lra::ops::softmax_attention(Q, K, V, key, causal, dropout_p, training, return_probs ? &probs : nullptr, {},
                                      query);
  } catch (const c10::Error& e) {
    fail(e.what_without_backtrace());
  }
  if (!return_probs) return wrap(out);
  return py::make_tuple(wrap(out), wrap(probs));
}

// The `lrahost` module a mixer may import: the host's own operations where a
// mixer should not use PyTorch's. lrahost.dropout(x, p, training) is the
// host's inverted dropout (lra/dropout.h): on the CPU its masks come from the
// host's counter-based generator, keyed by each example's place in the global
// batch, so they do not depend on how a batch is split over ranks or
// micro-batches, and they are those of the C++ mixers (the built-in
// transformer's attention dropout). torch.nn.functional.dropout draws from
// LibTorch's generator element by element instead.
void add_host_module() {
  auto m = py::module_::create_extension_module("lrahost", "The host's operations for Python mixers",
                                                new PyModuleDef());
  m.def(
      "dropout",
      [](py::object x, double p, bool training) -> py::object {
        const auto t = tensor_arg("dropout", x, "x");
        if (!(p >= 0.0 && p <= 1.0))
          throw py::value_error("lrahost.dropout: p must be in [0, 1], got " + std::to_string(p));
        return wrap(lra::ops::dropout(t, p, training));
      },
      py::arg("x"), py::arg("p"), py::arg("training"),
      "Inverted dropout as the host's mixers apply it: in training each element zeroed with probability p, the "
      "rest scaled by 1 / (1 - p); otherwise x itself.");
  m.def("softmax_attention", &host_softmax_attention, py::arg("q"), py::arg("k"), py::arg("v"),
        py::arg("key_mask") = py::none(), py::arg("causal") = false, py::arg("dropout_p") = 0.0,
        py::arg("training") = false, py::arg("query_mask") = py::none(), py::arg("return_probs") = false,
        "Softmax attention as the built-in transformer computes it (lra/attention.h): q, k, v [B, H, L, Dh]; "
        "key_mask / query_mask [B, L] bool, True = a real token; a masked query's row is uniform unless causal. "
        "Returns the output [B, H, Lq, Dv], or (output, probabilities) with return_probs.");
  py::module_::import("sys").attr("modules")["lrahost"] = m;
}

void start_interpreter() {
  // The dynamic loader opened libpython with this plugin, privately; torch's
  // Python extensions (and _ctypes) need its symbols global.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&Py_IsInitialized), &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);

  // Every signal disposition as the host set it, restored after torch's import.
  std::vector<struct sigaction> saved(NSIG);
  for (int s = 1; s < NSIG; ++s) sigaction(s, nullptr, &saved[s]);

#ifdef __SANITIZE_ADDRESS__
  // The sanitizer build: Python's objects come from malloc, not from pymalloc's
  // mmap'd arenas, which LeakSanitizer does not scan. Otherwise all that only
  // Python objects point to (torch's Python state: the interpreter is never
  // finalized) is reported as leaked when the process exits.
  PyPreConfig pre;
  PyPreConfig_InitPythonConfig(&pre);
  pre.allocator = PYMEM_ALLOCATOR_MALLOC;
  if (const PyStatus pre_st = Py_PreInitialize(&pre); PyStatus_Exception(pre_st))
    throw lra::Error(lra::ErrorKind::plugin, std::string("the embedded Python interpreter did not start: ") +
                                                 (pre_st.err_msg ? pre_st.err_msg : "unknown reason"));
#endif
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;
  config.parse_argv = 0;
  PyConfig_SetBytesString(&config, &config.executable, LRA_PYTHON_EXECUTABLE);
  const PyStatus st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st))
    throw lra::Error(lra::ErrorKind::plugin, std::string("the embedded Python interpreter did not start: ") +
                                                 (st.err_msg ? st.err_msg : "unknown reason"));
  {
    std::string failure;
    try {
      py::module_::import("torch");
      // torch's import makes its Python autograd engine the process's
      // default. The host runs every backward from C++ without the GIL, so
      // LibTorch's own engine is the one it needs (a Python autograd.Function
      // takes the GIL itself); on an H200 the Python engine had no CUDA
      // queues and failed every CUDA backward (docs/measured/gpu-check/).
      torch::autograd::set_default_engine_stub(&torch::autograd::Engine::get_base_engine);
      auto m = py::module_::create_extension_module("lra_python_bridge", nullptr, new PyModuleDef());
      py::exec(kBridgeSource, m.attr("__dict__"));
      py::list names;  // the SDK's list (lra/capabilities.h), so the bridge never keeps a copy
      for (const auto& c : lra::kCapabilities) names.append(c.name);
      m.attr("CAPABILITIES") = py::tuple(names);
      py::module_::import("sys").attr("modules")["lra_python_bridge"] = m;
      bridge = new py::module_(m);  // never freed: Python is never finalized
      add_host_module();
    } catch (py::error_already_set& e) {
      failure = std::string("the embedded Python could not import torch (") + LRA_PYTHON_EXECUTABLE +
                "; the Python plugin needs python3-torch, the same LibTorch as the host): " + e.what();
    }
    for (int s = 1; s < NSIG; ++s)
      if (s != SIGKILL && s != SIGSTOP) sigaction(s, &saved[s], nullptr);
    PyEval_SaveThread();  // every entry point takes the GIL itself
    if (!failure.empty()) throw lra::Error(lra::ErrorKind::plugin, failure);
  }
}

}  // namespace

void ensure_interpreter() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    try {
      start_interpreter();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw lra::Error(lra::ErrorKind::plugin, failure);
}




}  // namespace lra_python
