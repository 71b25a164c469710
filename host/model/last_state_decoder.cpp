#include "model/last_state_decoder.h"

#include <algorithm>
#include <cmath>

#include <torch/nn/init.h>

namespace lra::host {
namespace {

// MAD's _init_weights (auto_encoder.py): every Linear N(0, 0.02), zero bias.
torch::nn::Linear mad_dense(int64_t in, int64_t out) {
  torch::nn::Linear l(in, out);
  torch::NoGradGuard g;
  l->weight.normal_(0.0, 0.02);
  l->bias.zero_();
  return l;
}

}  // namespace

torch::Tensor sincos_positions(int64_t max_len, int64_t d) {
  const int64_t half = d / 2;
  // MAD divides by half - 1, which is 0 at d = 2 or 3 (NaN there); one
  // frequency of 1 keeps the code defined.
  const double step = std::log(10000.0) / static_cast<double>(std::max<int64_t>(half - 1, 1));
  const auto freq = torch::exp(torch::arange(half, torch::kDouble) * -step);
  const auto angle = torch::arange(max_len, torch::kDouble).unsqueeze(1) * freq.unsqueeze(0);
  auto table = torch::cat({torch::sin(angle), torch::cos(angle)}, 1);
  if (d % 2 == 1) table = torch::cat({table, torch::zeros({max_len, 1}, torch::kDouble)}, 1);
  return table.to(torch::kFloat);
}

torch::Tensor last_states(const torch::Tensor& x, const torch::Tensor& length_mask) {
  const auto last = (length_mask.sum(1) - 1).clamp_min(0);  // [B]; an empty example reads position 0
  return x.gather(1, last.view({-1, 1, 1}).expand({x.size(0), 1, x.size(2)})).squeeze(1);
}

RmsNormImpl::RmsNormImpl(int64_t d, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({d}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  // Float32 at least (bf16 autocast gives bf16 inputs), as MAD's fused kernel.
  const auto compute = x.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  const auto xf = x.to(compute);
  const auto y = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_) * weight.to(compute);
  return y.to(x.scalar_type());
}

LastStateDecoderImpl::LastStateDecoderImpl(int64_t d, int64_t num_classes, int64_t max_len) {
  pos_ = register_buffer("pos", sincos_positions(max_len, d));
  norm1 = register_module("norm1", RmsNorm(d));
  fc1 = register_module("fc1", mad_dense(d, d));
  norm2 = register_module("norm2", RmsNorm(d));
  fc2 = register_module("fc2", mad_dense(d, d));
  norm3 = register_module("norm3", RmsNorm(d));
  out = register_module("out", mad_dense(d, num_classes));
}

torch::Tensor LastStateDecoderImpl::forward(const torch::Tensor& states, const torch::Tensor& positions) {
  // Batches are cut to max_len, so every position has a code (no check: it
  // would synchronise with the device at every step).
  auto code_shape = positions.sizes().vec();
  code_shape.push_back(pos_.size(1));
  const auto code = pos_.index_select(0, positions.flatten()).view(code_shape);
  // The only input of position p: the example's last state and p's code.
  auto h = states + code.to(states.scalar_type());
  h = torch::gelu(fc1(norm1(h)));  // exact GELU, as nn.GELU()
  h = torch::gelu(fc2(norm2(h)));
  return out(norm3(h));
}

}  // namespace lra::host
