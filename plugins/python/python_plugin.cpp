// python: runs a torch.nn.Module written in Python as a mixer, under the same
// rules as a C++ plugin. The host names it FILE.py:CLASS (host/plugins/
// python_mixer.cpp); this library embeds CPython, whose `import torch` shares
// the host's LibTorch, so the module's tensors are the host's tensors: its
// parameters and buffers are registered on a C++ mirror of its submodules,
// and the optimizer, checkpoints, model.pt and device/dtype moves act on them
// directly.
//
// The traps of embedding, each handled here: libpython is made global before
// start-up (else torch's extensions miss its symbols); Python never installs
// signal handlers and those torch's import changes are put back (Ctrl-C stays
// the host's); the GIL is released after start-up and taken in every entry
// point; LibTorch's autograd engine stays the default (torch's import swaps in
// its Python one); the interpreter is never finalized; sys.executable is the build's
// python3; files are imported by path under unique names, each folder's
// helper modules kept apart; a buffer that Python replaces with a new tensor
// is re-registered after each forward (without touching the data the
// forward's graph saved); tied weights are registered once; the default dtype
// and grad mode Python code leaves changed are put back and refused.
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
#include "python_interpreter.h"

namespace py = pybind11;
using namespace lra_python;

namespace {

// ---- the mixer --------------------------------------------------------------

// One parameter or buffer as both sides hold it.
struct Slot {
  py::object owner;  // the Python submodule
  std::string name;
  bool buffer;
  at::Tensor tensor;  // the C++ registration (a parameter: the same TensorImpl as Python's)
  at::Tensor given;   // a buffer: what Python was given for this forward (an alias of `tensor`)
};

class PythonMixer final : public lra::Mixer {
 public:
  PythonMixer(py::object instance, std::string file, std::string cls)
      : instance_(std::move(instance)), file_(std::move(file)), cls_(std::move(cls)), where_(file_ + ":" + cls_) {
    mirror(*this, instance_);
  }
  ~PythonMixer() override {
    py::gil_scoped_acquire gil;
    slots_.clear();
    instance_ = py::object();
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    py::gil_scoped_acquire gil;
    py::object out;
    const TorchState state;
    try {
      alias_buffers();
      out = instance_(wrap(x), mask.defined() ? wrap(mask) : py::none());
      resync();
    } catch (py::error_already_set& e) {
      state.restore();
      throw lra::Error(lra::ErrorKind::plugin, error_text(e, cls_ + ".forward", file_));
    }
    state.check(where_ + ".forward");
    if (!is_tensor(out))
      throw lra::Error(lra::ErrorKind::plugin, where_ + ".forward returned a " +
                                                   py::str(py::type::of(out).attr("__name__")).cast<std::string>() +
                                                   ", not a torch.Tensor [B, L, D]");
    at::Tensor y = THPVariable_Unpack(out.ptr());
    if (y.sizes() != x.sizes())
      throw lra::Error(lra::ErrorKind::plugin, where_ + ".forward returned shape " + shape(y) + " for x of shape " +
                                                   shape(x) + ": a mixer returns [B, L, D], the shape of x");
    if (record_attention_) {
      py::object probs = py::getattr(instance_, "lra_last_attention", py::none());
      if (!is_tensor(probs))
        throw lra::Error(lra::ErrorKind::plugin,
                         where_ + " declares attention_probs but its forward left no tensor in "
                                  "self.lra_last_attention while self.lra_record_attention was True");
      last_attention_ = THPVariable_Unpack(probs.ptr()).detach();
    }
    return y;
  }

  // SDK 1.2 optimizer hints from the class's own optimizer_hints(self): a list
  // of dicts {"name", "no_weight_decay", "lr_scale", "lr_max"} (name required).
  std::vector<lra::ParamHint> optimizer_hints() const override {
    py::gil_scoped_acquire gil;
    std::vector<lra::ParamHint> hints;
    const std::string what = where_ + ".optimizer_hints()";
    try {
      if (!py::hasattr(instance_, "optimizer_hints")) return hints;
      const py::object list = instance_.attr("optimizer_hints")();
      if (!py::isinstance<py::list>(list) && !py::isinstance<py::tuple>(list))
        throw lra::Error(lra::ErrorKind::plugin, what + " must return a list of dicts, got a " +
                                                     py::str(py::type::of(list).attr("__name__")).cast<std::string>());
      for (const py::handle item : list) {
        if (!py::isinstance<py::dict>(item))
          throw lra::Error(lra::ErrorKind::plugin, what + " must return a list of dicts, one item is a " +
                                                       py::str(py::type::of(item).attr("__name__")).cast<std::string>());
        const auto d = item.cast<py::dict>();
        lra::ParamHint h;
        for (const auto& kv : d) {
          const std::string key = py::str(kv.first).cast<std::string>();
          if (key == "name") h.name = kv.second.cast<std::string>();
          else if (key == "no_weight_decay") h.no_weight_decay = kv.second.cast<bool>();
          else if (key == "lr_scale") h.lr_scale = kv.second.cast<double>();
          else if (key == "lr_max") h.lr_max = kv.second.cast<double>();
          else
            throw lra::Error(lra::ErrorKind::plugin, what + ": unknown key '" + key +
                                                         "' (a hint has name, no_weight_decay, lr_scale, lr_max)");
        }
        if (h.name.empty()) throw lra::Error(lra::ErrorKind::plugin, what + ": a hint without a 'name'");
        hints.push_back(h);
      }
    } catch (py::error_already_set& e) {
      throw lra::Error(lra::ErrorKind::plugin, error_text(e, cls_ + ".optimizer_hints", file_));
    } catch (const py::cast_error& e) {
      throw lra::Error(lra::ErrorKind::plugin, what + ": a value of the wrong type (" + e.what() +
                                                   "); name is a str, no_weight_decay a bool, lr_scale and lr_max numbers");
    }
    return hints;
  }

  // SDK 1.3 decoding through the class's own decode_start(self, batch, dtype,
  // device) -> list of tensors and decode_step(self, x_t, state, position) ->
  // (y_t, state); a class without both does not decode.
  bool decodes() const override {
    py::gil_scoped_acquire gil;
    return py::hasattr(instance_, "decode_start") && py::hasattr(instance_, "decode_step");
  }

  std::vector<torch::Tensor> decode_start(int64_t batch, const torch::TensorOptions& options) override {
    py::gil_scoped_acquire gil;
    if (!py::hasattr(instance_, "decode_start")) return lra::Mixer::decode_start(batch, options);
    py::object out;
    try {
      const py::object like = wrap(torch::empty({0}, options));
      out = instance_.attr("decode_start")(batch, like.attr("dtype"), like.attr("device"));
    } catch (py::error_already_set& e) {
      throw lra::Error(lra::ErrorKind::plugin, error_text(e, cls_ + ".decode_start", file_));
    }
    return tensor_list(out, where_ + ".decode_start");
  }

  torch::Tensor decode_step(const torch::Tensor& x_t, std::vector<torch::Tensor>& state, int64_t position) override {
    py::gil_scoped_acquire gil;
    if (!py::hasattr(instance_, "decode_step")) return lra::Mixer::decode_step(x_t, state, position);
    py::object out;
    try {
      out = instance_.attr("decode_step")(wrap(x_t), state_list(state), position);
    } catch (py::error_already_set& e) {
      throw lra::Error(lra::ErrorKind::plugin, error_text(e, cls_ + ".decode_step", file_));
    }
    return output_and_state(out, x_t, state, {"decode_step", "y_t", "x_t", "[B, D]", "a step"});
  }

  // SDK 1.6: a class's own prefill(self, x, state) -> (y, state) over a whole
  // prompt [B, L, D] from decode_start's state; without one, the host steps.
  bool prefills_in_parallel() const override {
    py::gil_scoped_acquire gil;
    return decodes() && py::hasattr(instance_, "prefill");
  }

  torch::Tensor prefill(const torch::Tensor& x, std::vector<torch::Tensor>& state) override {
    bool own = false;
    {
      py::gil_scoped_acquire gil;
      own = py::hasattr(instance_, "prefill");
    }
    if (!own) return lra::Mixer::prefill(x, state);  // decode_step per position (each takes the GIL)
    py::gil_scoped_acquire gil;
    py::object out;
    try {
      out = instance_.attr("prefill")(wrap(x), state_list(state));
    } catch (py::error_already_set& e) {
      throw lra::Error(lra::ErrorKind::plugin, error_text(e, cls_ + ".prefill", file_));
    }
    return output_and_state(out, x, state, {"prefill", "y", "x", "[B, L, D]", "a prefill"});
  }

  void set_record_attention(bool on) override {
    lra::Mixer::set_record_attention(on);
    py::gil_scoped_acquire gil;
    try {
      instance_.attr("lra_record_attention") = on;
    } catch (py::error_already_set& e) {
      throw lra::Error(lra::ErrorKind::plugin, error_text(e, cls_ + ": setting lra_record_attention", file_));
    }
  }

  void train(bool on = true) override {
    torch::nn::Module::train(on);
    py::gil_scoped_acquire gil;
    try {
      instance_.attr("train")(on);
    } catch (py::error_already_set& e) {
      throw lra::Error(lra::ErrorKind::plugin, error_text(e, cls_ + ".train", file_));
    }
  }

 private:
  static std::vector<torch::Tensor> tensor_list(const py::handle& list, const std::string& what) {
    if (!py::isinstance<py::list>(list) && !py::isinstance<py::tuple>(list))
      throw lra::Error(lra::ErrorKind::plugin, what + " must be a list of tensors, got a " +
                                                   py::str(py::type::of(list).attr("__name__")).cast<std::string>());
    std::vector<torch::Tensor> out;
    for (const py::handle item : list) {
      if (!is_tensor(py::reinterpret_borrow<py::object>(item)))
        throw lra::Error(lra::ErrorKind::plugin, what + " must be a list of tensors; one item is a " +
                                                     py::str(py::type::of(item).attr("__name__")).cast<std::string>());
      out.push_back(THPVariable_Unpack(item.ptr()));
    }
    return out;
  }

  static std::string shape(const at::Tensor& t) {
    std::string s = "[";
    for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
  }

  // The decoding state as the Python call takes it (the GIL held).
  static py::list state_list(const std::vector<torch::Tensor>& state) {
    py::list given;
    for (const auto& t : state) given.append(wrap(t));
    return given;
  }

  // How a decoding call's (y, state) is named in messages.
  struct StateCall {
    const char* method;  // "decode_step"
    const char* y;       // "y_t"
    const char* x;       // "x_t"
    const char* shape;   // "[B, D]"
    const char* kind;    // "a step"
  };

  // A decoding call's result (y, state): y of x's shape, the state kept in
  // `state`; anything else is the plugin's fault, named (the GIL held).
  torch::Tensor output_and_state(const py::object& out, const torch::Tensor& x, std::vector<torch::Tensor>& state,
                                 const StateCall& c) const {
    const std::string what = where_ + "." + c.method;
    if (!py::isinstance<py::tuple>(out) || py::len(out) != 2 || !is_tensor(out[py::int_(0)]))
      throw lra::Error(lra::ErrorKind::plugin, what + " must return (" + c.y + ", state): a tensor " + c.shape +
                                                   " and a list of tensors");
    at::Tensor y = THPVariable_Unpack(out[py::int_(0)].ptr());
    if (y.sizes() != x.sizes())
      throw lra::Error(lra::ErrorKind::plugin, what + " returned shape " + shape(y) + " for " + c.x + " of shape " +
                                                   shape(x) + ": " + c.kind + " returns " + c.shape + ", the shape of " +
                                                   c.x);
    state = tensor_list(out[py::int_(1)], what + "'s state");
    return y;
  }

  // Registers the Python module's own parameters and buffers on `cpp` and its
  // submodules as C++ children of the same names, so the host's names
  // (a.b.weight) are PyTorch's. A tensor or submodule reachable under two
  // names (tied weights: self.k = self.q) is registered once, under the first,
  // as PyTorch's parameters() counts it: the optimizer updates it once per
  // step and the parameter budget counts it once.
  void mirror(torch::nn::Module& cpp, const py::object& pymod) {
    seen_modules_.insert(pymod.ptr());
    for (auto item : pymod.attr("_parameters").cast<py::dict>()) {
      if (item.second.is_none()) continue;
      const auto name = item.first.cast<std::string>();
      at::Tensor t = THPVariable_Unpack(item.second.ptr());
      if (!seen_tensors_.insert(t.unsafeGetTensorImpl()).second) continue;
      cpp.register_parameter(name, t, t.requires_grad());
      slots_.push_back({pymod, name, false, t, t});
    }
    for (auto item : pymod.attr("_buffers").cast<py::dict>()) {
      if (item.second.is_none()) continue;
      const auto name = item.first.cast<std::string>();
      at::Tensor t = THPVariable_Unpack(item.second.ptr());
      if (!seen_tensors_.insert(t.unsafeGetTensorImpl()).second) continue;
      cpp.register_buffer(name, t);
      slots_.push_back({pymod, name, true, t, t});
    }
    for (auto item : pymod.attr("_modules").cast<py::dict>()) {
      if (item.second.is_none() || seen_modules_.count(item.second.ptr())) continue;
      auto child = std::make_shared<torch::nn::Module>();
      mirror(*child, py::reinterpret_borrow<py::object>(item.second));
      cpp.register_module(item.first.cast<std::string>(), child);
    }
  }

  // Each forward gives Python an alias of every buffer (a new TensorImpl on
  // the registration's storage): changes in place reach the registration,
  // and the host's own changes between forwards (to(dtype), loading a
  // checkpoint) reach Python. If the forward replaces it (self.buf = new)
  // after using it, its autograd graph saved the alias, whose data stay the
  // ones this forward used while the registration takes the new data.
  void alias_buffers() {
    for (auto& s : slots_) {
      if (!s.buffer) continue;
      s.given = s.tensor.detach();
      s.owner.attr("_buffers")[s.name.c_str()] = wrap(s.given);
    }
  }

  // A buffer the forward replaced is moved into the C++ registration (its
  // TensorImpl, the new data). A parameter must stay the tensor the host's
  // optimizer trains: this forward's gradients went to the replacement, which
  // nothing would update.
  void resync() {
    for (auto& s : slots_) {
      py::dict table = s.owner.attr(s.buffer ? "_buffers" : "_parameters");
      py::object now = table.contains(s.name.c_str()) ? py::object(table[s.name.c_str()]) : py::none();
      if (!is_tensor(now))
        throw lra::Error(lra::ErrorKind::plugin, where_ + " removed its " + (s.buffer ? "buffer" : "parameter") +
                                                     " '" + s.name + "' during forward");
      at::Tensor t = THPVariable_Unpack(now.ptr());
      if (t.unsafeGetTensorImpl() == s.given.unsafeGetTensorImpl()) continue;
      if (!s.buffer)
        throw lra::Error(lra::ErrorKind::plugin,
                         where_ + " replaced its parameter '" + s.name + "' with a new tensor during forward: the "
                                  "host's optimizer trains the parameter created in __init__ (and this forward's "
                                  "gradients went to the new one); change it in place under torch.no_grad(), or "
                                  "make it a buffer (register_buffer) if it is not trained");
      at::NoGradGuard no_grad;
      s.tensor.set_data(t.detach());
    }
  }

  py::object instance_;
  std::string file_, cls_, where_;  // the class's file, its name, FILE:CLASS
  std::vector<Slot> slots_;
  std::unordered_set<const void*> seen_tensors_;  // TensorImpls mirrored (once each)
  std::unordered_set<PyObject*> seen_modules_;    // Python modules mirrored (once each)
};

// ---- one class as a mixer plugin ----------------------------------------------

lra::Value to_value(const std::string& type, const py::handle& v) {
  if (type == "bool") return v.cast<bool>();
  if (type == "int") return v.cast<int64_t>();
  if (type == "float") return v.cast<double>();
  return v.cast<std::string>();
}

class PythonClassPlugin final : public lra::MixerPlugin {
 public:
  PythonClassPlugin(py::object cls, std::string file, std::string name, uint32_t caps,
                    std::vector<lra::OptionSpec> options)
      : cls_(std::move(cls)), file_(std::move(file)), name_(std::move(name)), where_(file_ + ":" + name_),
        caps_(caps), options_(std::move(options)) {}

  lra::Status options(std::vector<lra::OptionSpec>* out) const noexcept override {
    return lra::guarded([&] { *out = options_; });
  }

  lra::Status create(const lra::MixerSpec& spec, const lra::Params& options,
                     std::shared_ptr<lra::Mixer>* out) const noexcept override {
    return lra::guarded([&] {
      if (spec.causal && !(caps_ & LRA_CAP_CAUSAL))
        throw lra::Error(lra::ErrorKind::plugin, "mixer '" + where_ +
                                                     "' does not support causal mode (its lra_capabilities lack "
                                                     "\"causal\")");
      if (spec.rotary_base > 0 && !(caps_ & LRA_CAP_ROTARY))
        throw lra::Error(lra::ErrorKind::plugin, "mixer '" + where_ +
                                                     "' does not support rotary positions (its lra_capabilities lack "
                                                     "\"rotary\")");
      py::gil_scoped_acquire gil;
      py::dict kw;
      kw["d_model"] = spec.d_model;
      kw["heads"] = spec.heads;
      kw["qkv_dim"] = spec.qkv_dim;
      kw["max_len"] = spec.max_len;
      kw["causal"] = spec.causal;
      kw["attention_dropout"] = spec.attention_dropout;
      kw["layer_index"] = spec.layer_index;
      kw["seed"] = spec.seed;
      kw["rotary_base"] = spec.rotary_base;
      for (const auto& [k, v] : options) std::visit([&](const auto& x) { kw[k.c_str()] = x; }, v);
      py::object instance;
      const TorchState state;
      try {
        instance = cls_(**kw);
      } catch (py::error_already_set& e) {
        state.restore();
        throw lra::Error(lra::ErrorKind::plugin, error_text(e, name_ + ".__init__", file_));
      }
      state.check(where_ + ".__init__");
      *out = std::make_shared<PythonMixer>(std::move(instance), file_, name_);
    });
  }

 private:
  py::object cls_;
  std::string file_, name_, where_;  // the class's file, its name, FILE:CLASS
  uint32_t caps_;
  std::vector<lra::OptionSpec> options_;
};

// ---- the plugin as a name (`--plugin python` alone) -------------------------

std::vector<lra::OptionSpec> no_options() { return {}; }
std::shared_ptr<lra::Mixer> refuse(const lra::MixerSpec&, const lra::ParamReader&) {
  throw lra::Error(lra::ErrorKind::usage,
                   "the python plugin runs a class from a file: name it as --plugin FILE.py:CLASS "
                   "(docs/writing-a-python-mixer.md)");
}

}  // namespace

LRA_MIXER_PLUGIN("python", "1.0.0", "Runs a torch.nn.Module written in Python: --plugin FILE.py:CLASS",
                 LRA_CAP_CAUSAL | LRA_CAP_PADDING_MASK | LRA_CAP_ATTENTION_PROBS | LRA_CAP_ROTARY, no_options, refuse)

extern "C" __attribute__((visibility("default"))) lra::Status lra_python_mixer_open_v1(
    const char* file, const char* class_name, lra::host::PythonMixerClass* out) {
  return lra::guarded([&] {
    ensure_interpreter();
    py::gil_scoped_acquire gil;
    const TorchState state;
    try {
      py::tuple d = bridge->attr("describe")(file, class_name);
      try {
        state.check(std::string("importing ") + file);
      } catch (...) {
        bridge->attr("unload")(file);  // imported again next time, and refused again
        throw;
      }
      uint32_t caps = 0;
      for (auto c : d[1]) caps |= lra::capability_bit(c.cast<std::string>());  // the bridge refused unknown names
      std::vector<lra::OptionSpec> options;
      for (auto o : d[2]) {
        auto t = o.cast<py::tuple>();
        options.push_back({t[0].cast<std::string>(), to_value(t[1].cast<std::string>(), t[2]), ""});
      }
      out->class_name = class_name;
      out->capabilities = caps;
      out->identity_json = d[3].cast<std::string>();
      out->plugin =
          new PythonClassPlugin(py::reinterpret_borrow<py::object>(d[0]), file, class_name, caps, std::move(options));
    } catch (py::error_already_set& e) {
      state.restore();
      throw lra::Error(lra::ErrorKind::plugin, error_text(e, std::string("importing ") + file, file));
    }
  });
}
