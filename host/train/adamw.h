// train/adamw.h — the optimizer step every trainer and benchmark shares:
// gradient clipping by global norm, then AdamW.
//
// On CUDA with LibTorch >= 2.1 both run as PyTorch's fused and foreach
// kernels (`_fused_adamw_`, `_foreach_norm`/`_foreach_mul_`): a few launches
// per step instead of ~10 per parameter, and no host synchronisation (LibTorch's
// clip_grad_norm_ reads the norm back every step). The arithmetic is AdamW's
// and clip_grad_norm_'s; the optimizer state is the stock AdamW's, so
// checkpoints load either way. Everywhere else (the CPU, LibTorch 1.13) it is
// the stock torch::optim::AdamW and clip_grad_norm_, unchanged.
// LRA_FUSED_OPTIMIZER=0 in the environment turns the fused path off (A/B
// measurements, docs/performance.md).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <torch/optim/adamw.h>

namespace lra::host {

// Whether this build can run the fused step at all (LibTorch >= 2.1).
bool fused_optimizer_compiled();

// Compiled in and not turned off by LRA_FUSED_OPTIMIZER=0: float32 CUDA
// parameters then take the fused step (what a CUDA graph needs, train/step_graph.h).
bool fused_optimizer_enabled();

// Scales the gradients of `params` so their global 2-norm is at most
// max_norm: torch::nn::utils::clip_grad_norm_, without reading the norm back
// when every gradient is a float32 CUDA tensor and the fused path is on.
void clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

class HostAdamW : public torch::optim::AdamW {
 public:
  HostAdamW(std::vector<torch::optim::OptimizerParamGroup> groups, torch::optim::AdamWOptions defaults);

  // AdamW's update; fused on CUDA where compiled and not turned off.
  torch::Tensor step(LossClosure closure = nullptr) override;

  // What the last step ran: "fused AdamW (CUDA)" or "AdamW"; for logs.
  std::string kind() const;

  bool fused_ready() const;  // every parameter float32 on one CUDA device, and enabled

  // CUDA graphs (train/step_graph.h). The fused step reads each group's
  // learning rate from a device tensor, which stage_learning_rates() sets
  // from the groups' options before each update (outside any capture), so a
  // captured step follows the schedule. A replayed step runs no host code:
  // count_replayed_step() advances the host's update counts (what a
  // checkpoint saves) as the step would have.
  void use_device_learning_rates(bool on);
  void stage_learning_rates();
  void count_replayed_step();

 private:
  void fused_step();

  bool last_fused_ = false;
  bool device_lr_ = false;
  std::vector<torch::Tensor> lr_tensors_;  // one per group, on the parameters' device
  // The states the last fused step advanced, with their device counters' host mirrors.
  std::vector<std::pair<torch::optim::AdamWParamState*, int64_t*>> last_updated_;
  // The fused kernel reads the update count from a device tensor per
  // parameter; mirrored from (and into) AdamW's own integer step.
  std::unordered_map<void*, std::pair<torch::Tensor, int64_t>> step_tensors_;
};

}  // namespace lra::host
