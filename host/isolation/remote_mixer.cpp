#include "isolation/remote_mixer.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "lra/status.h"
#include "train/autocast.h"

namespace lra::host {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class RemoteMixer;

// A call's graph held in the process: let go of it there when autograd frees
// this call's node without a backward (a forward whose output was dropped).
struct HeldCall : torch::CustomClassHolder {
  MixerProcess* process = nullptr;
  int64_t call = -1;
  bool done = false;
  ~HeldCall() override {
    if (!done && process) process->release_later(call);
  }
};

struct Across {
  MixerProcess* process;
  uint32_t id;
  at::Tensor mask;
  MixerProcess::Forward how;
  MixerProcess::Answer* answer;  // the call's other results, for the mixer
};

// forward(x, params...) -> y through the process; backward: the output's
// gradient across, the input's and the parameters' back.
struct RemoteCall : torch::autograd::Function<RemoteCall> {
  static at::Tensor forward(AutogradContext* ctx, const Across* a, const at::Tensor& x, at::TensorList params) {
    MixerProcess::Answer t = a->process->forward(a->id, x, a->mask, a->how);
    *a->answer = t;
    auto held = c10::make_intrusive<HeldCall>();
    held->process = a->process;
    held->call = t.call;
    ctx->saved_data["held"] = c10::IValue::make_capsule(held);
    ctx->saved_data["x"] = x.detach();  // for the shape of its gradient only
    std::vector<at::Tensor> shapes;
    for (const auto& p : params) shapes.push_back(p.detach());
    ctx->saved_data["params"] = shapes;
    return t.out.to(x.device());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto held = c10::static_intrusive_pointer_cast<HeldCall>(ctx->saved_data["held"].toCapsule());
    const at::Tensor x = ctx->saved_data["x"].toTensor();
    const std::vector<at::Tensor> params = ctx->saved_data["params"].toTensorVector();
    held->done = true;  // the process lets go of the graph as it answers
    at::Tensor g = grad_out.at(0);
    if (!g.defined()) g = at::zeros_like(x);
    MixerProcess::Gradients got = held->process->backward(held->call, g, x, params);
    variable_list out = {at::Tensor(), got.x.defined() ? got.x.to(x.device()) : at::Tensor()};
    for (size_t i = 0; i < params.size(); ++i)
      out.push_back(got.params[i].defined() ? got.params[i].to(params[i].device()) : at::Tensor());
    return out;
  }
};

class RemoteMixer final : public lra::Mixer {
 public:
  RemoteMixer(MixerProcess& process, MixerProcess::Created created)
      : process_(process), id_(created.id), hints_(std::move(created.hints)), decodes_(created.decodes) {
    for (auto& nt : created.tensors) add(nt);
    remember_pushed();  // the process holds these very values already
  }
  ~RemoteMixer() override { process_.drop_later(id_); }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    push_if_changed();
    const bool autocast = x.is_cuda() && CudaBf16Autocast::active();
    std::vector<at::Tensor> trainable;
    for (const auto& nt : wire::module_tensors(*this))
      if (nt.parameter && nt.tensor.requires_grad()) trainable.push_back(nt.tensor);
    const bool grad = torch::GradMode::is_enabled() &&
                      (x.requires_grad() || std::any_of(trainable.begin(), trainable.end(),
                                                        [](const at::Tensor& t) { return t.requires_grad(); }));
    const MixerProcess::Forward how{is_training(), autocast, grad, record_attention_};
    MixerProcess::Answer got;
    at::Tensor out;
    if (grad) {
      const Across a{&process_, id_, mask, how, &got};
      out = RemoteCall::apply(&a, x, at::TensorList(trainable));
    } else {
      got = process_.forward(id_, x, mask, how);
      out = got.out.to(x.device());
    }
    if (record_attention_) last_attention_ = got.probs.defined() ? got.probs.to(x.device()) : got.probs;
    keep_changed_buffers(got.buffers);
    return out;
  }

  std::vector<lra::ParamHint> optimizer_hints() const override { return hints_; }

  // Decoding runs in the process; the state comes back with every step, so
  // the host holds, and counts, all the steps are given (plugins/state_size.h).
  bool decodes() const override { return decodes_; }
  std::vector<torch::Tensor> decode_start(int64_t batch, const torch::TensorOptions& options) override {
    push_if_changed();
    auto state = process_.decode_start(id_, batch, options.dtype() == torch::kDouble);
    for (auto& t : state)
      if (t.defined()) t = t.to(options.device());
    return state;
  }
  torch::Tensor decode_step(const torch::Tensor& x_t, std::vector<torch::Tensor>& state, int64_t position) override {
    push_if_changed();
    at::Tensor y = process_.decode_step(id_, x_t, state, position);
    for (auto& t : state)
      if (t.defined()) t = t.to(x_t.device());
    return y.to(x_t.device());
  }

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

  // What the process holds: the tensors as last sent or received (loading
  // model.pt, moving the model, an optimizer step or the summary probe's
  // re-initialisation changes them here).
  wire::TensorMarks marks() const { return wire::tensor_marks(wire::module_tensors(*this)); }
  void remember_pushed() { pushed_ = marks(); }
  // Buffers the process changed in a call (redrawn random features) become
  // the host's too, so model.pt, checkpoints and the next push carry them.
  void keep_changed_buffers(const std::vector<std::pair<uint32_t, at::Tensor>>& changed) {
    if (changed.empty()) return;
    const auto own = wire::module_tensors(*this);
    torch::NoGradGuard no_grad;
    for (const auto& [index, value] : changed) {
      if (index >= own.size() || own[index].parameter || !own[index].tensor.sizes().equals(value.sizes()) ||
          own[index].tensor.scalar_type() != value.scalar_type())
        throw Error(ErrorKind::plugin, "the mixer process answered with a changed buffer that is not one of the "
                                       "mixer's, of its shape and type");
      own[index].tensor.copy_(value);
    }
    remember_pushed();
  }
  void push_if_changed() {
    if (marks() == pushed_) return;
    process_.load(id_, wire::module_tensors(*this));
    remember_pushed();
  }

  MixerProcess& process_;
  uint32_t id_;
  std::vector<lra::ParamHint> hints_;
  bool decodes_ = false;
  wire::TensorMarks pushed_;
};

}  // namespace

MixerFactory remote_mixer_factory(MixerProcess& process, const std::map<std::string, std::string>& options) {
  return [&process, options](const lra::MixerSpec& spec) -> std::shared_ptr<lra::Mixer> {
    return std::make_shared<RemoteMixer>(process, process.create(spec, options));
  };
}

}  // namespace lra::host
