#include "train/adamw.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <type_traits>

#include <ATen/ATen.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/version.h>

// `_fused_adamw_` and the Tensor overload of `_foreach_mul_` arrived in 2.1.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define LRA_FUSED_OPTIMIZER 1
#endif

namespace lra::host {

bool fused_optimizer_compiled() {
#ifdef LRA_FUSED_OPTIMIZER
  return true;
#else
  return false;
#endif
}

// Read once per process.
bool fused_optimizer_enabled() {
  static const bool wanted = [] {
    const char* v = std::getenv("LRA_FUSED_OPTIMIZER");
    return fused_optimizer_compiled() && !(v && std::strcmp(v, "0") == 0);
  }();
  return wanted;
}

namespace {
// AdamW's own key for a parameter's state: the TensorImpl's address, as a
// string in LibTorch 1.x ("0x..."), as the pointer itself in later releases.
template <class Map>
typename Map::key_type state_key(const Map&, const at::Tensor& p) {
  using Key = typename Map::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << static_cast<const void*>(p.unsafeGetTensorImpl());
    return s.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

// What the fused kernels take: dense float32 tensors, all on one CUDA device.
bool fusable(const std::vector<at::Tensor>& tensors) {
  for (const auto& t : tensors)
    if (!t.is_cuda() || t.is_sparse() || t.scalar_type() != at::kFloat || t.device() != tensors.front().device())
      return false;
  return !tensors.empty();
}

// The gradients that exist, in order.
std::vector<at::Tensor> defined_grads(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  return grads;
}
}  // namespace

HostAdamW::HostAdamW(std::vector<torch::optim::OptimizerParamGroup> groups, torch::optim::AdamWOptions defaults)
    : torch::optim::AdamW(std::move(groups), std::move(defaults)) {}

std::string HostAdamW::kind() const { return last_fused_ ? "fused AdamW (CUDA)" : "AdamW"; }

bool HostAdamW::fused_ready() const {
  if (!fused_optimizer_enabled()) return false;
  std::vector<at::Tensor> params;
  for (const auto& group : param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) return false;
    params.insert(params.end(), group.params().begin(), group.params().end());
  }
  const auto grads = defined_grads(params);
  return fusable(params) && (grads.empty() || fusable(grads));
}

torch::Tensor HostAdamW::step(LossClosure closure) {
  last_fused_ = fused_ready();
  if (!last_fused_) return torch::optim::AdamW::step(std::move(closure));
  torch::Tensor loss;
  if (closure) {
    c10::AutoGradMode grad_on(true);
    loss = closure();
  }
  fused_step();
  return loss;
}

void HostAdamW::use_device_learning_rates(bool on) {
  device_lr_ = on;
  lr_tensors_.clear();
}

void HostAdamW::stage_learning_rates() {
  if (!device_lr_) return;
  c10::NoGradGuard no_grad;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const auto& group = param_groups()[g];
    if (group.params().empty()) continue;
    const double lr = static_cast<const torch::optim::AdamWOptions&>(group.options()).lr();
    if (lr_tensors_.size() <= g) lr_tensors_.resize(param_groups().size());
    if (!lr_tensors_[g].defined())
      lr_tensors_[g] = at::empty({}, group.params().front().options().dtype(at::kFloat));
    lr_tensors_[g].fill_(lr);  // a kernel with the value as its argument: nothing is read back
  }
}

void HostAdamW::count_replayed_step() {
  for (auto [st, mirrored] : last_updated_) {  // as fused_step's host side, which a replay does not run
    st->step(st->step() + 1);
    *mirrored = st->step();
  }
}

void HostAdamW::fused_step() {
#ifdef LRA_FUSED_OPTIMIZER
  c10::NoGradGuard no_grad;
  last_updated_.clear();
  for (size_t g = 0; g < param_groups().size(); ++g) {
    auto& group = param_groups()[g];
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      void* impl = p.unsafeGetTensorImpl();
      const auto key = state_key(state_, p);
      auto it = state_.find(key);
      if (it == state_.end()) {  // as AdamW::step initialises a parameter's state
        auto st = std::make_unique<torch::optim::AdamWParamState>();
        st->step(0);
        st->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        st->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        it = state_.emplace(key, std::move(st)).first;
      }
      auto& st = static_cast<torch::optim::AdamWParamState&>(*it->second);
      auto& [count, mirrored] = step_tensors_[impl];
      // A fresh parameter, or state replaced since (a checkpoint load): the
      // device counter starts again from AdamW's own.
      if (!count.defined() || count.device() != p.device() || mirrored != st.step())
        count = at::scalar_tensor(static_cast<double>(st.step()), p.options().dtype(at::kFloat));
      st.step(st.step() + 1);  // the host's copy, without reading the device
      mirrored = st.step();
      last_updated_.emplace_back(&st, &mirrored);
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(st.exp_avg());
      exp_avg_sqs.push_back(st.exp_avg_sq());
      steps.push_back(count);
    }
    if (params.empty()) continue;
    at::_foreach_add_(steps, 1);  // the kernel reads the count after this update, as AdamW's
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    if (device_lr_) {  // staged by stage_learning_rates(): a captured step reads the schedule's value
      TORCH_CHECK(g < lr_tensors_.size() && lr_tensors_[g].defined(),
                  "HostAdamW: device learning rates used before stage_learning_rates()");
      at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, lr_tensors_[g],
                        std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(), o.eps(),
                        /*amsgrad=*/false, /*maximize=*/false);
      continue;
    }
#endif
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, o.lr(),
                      std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(), o.eps(),
                      /*amsgrad=*/false, /*maximize=*/false);
  }
#endif
}

void clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
#ifdef LRA_FUSED_OPTIMIZER
  if (fused_optimizer_enabled()) {
    const auto grads = defined_grads(params);
    if (fusable(grads)) {
      c10::NoGradGuard no_grad;
      // clip_grad_norm_'s arithmetic: the 2-norm of the per-tensor 2-norms,
      // scale = min(1, max_norm / (norm + 1e-6)), applied to every gradient.
      const auto norms = at::_foreach_norm(grads, 2);
      const auto total = at::linalg_vector_norm(at::stack(norms), 2);
      const auto scale = (total + 1e-6).reciprocal().mul(max_norm).clamp_max(1.0);
      at::_foreach_mul_(grads, scale);
      return;
    }
  }
#endif
  torch::nn::utils::clip_grad_norm_(params, max_norm);
}

}  // namespace lra::host
