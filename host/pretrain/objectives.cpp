#include "pretrain/objectives.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "lra/dropout.h"
#include "lra/status.h"

namespace lra::host {
namespace {

// A seed per (trial, update) with no structure left: the SDK's SplitMix64
// step (lra/dropout.h), one Weyl increment then the output function.
uint64_t mix(uint64_t x) { return lra::ops::detail::splitmix64(x + 0x9e3779b97f4a7c15ULL); }

// Mean over each input's chosen positions of the per-token values, summed over
// inputs and divided by `batch`.
at::Tensor per_input_mean(const at::Tensor& values, const at::Tensor& chosen, int64_t batch) {
  const auto w = chosen.to(at::kFloat);
  const auto per_input = (values * w).sum(1) / w.sum(1).clamp_min(1.0);
  return per_input.sum() / static_cast<double>(batch);
}

TokenLoss token_loss(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& chosen, int64_t batch) {
  const auto V = logits.size(-1);
  const auto flat = at::cross_entropy_loss(logits.reshape({-1, V}).to(at::kFloat), targets.reshape({-1}), {},
                                           at::Reduction::None)
                        .view(targets.sizes());
  TokenLoss out;
  out.loss = per_input_mean(flat, chosen, batch);
  const auto right = logits.argmax(-1).eq(targets).to(at::kFloat);
  out.correct = per_input_mean(right.detach(), chosen, 1).to(at::kDouble);
  return out;
}

}  // namespace

at::Tensor draw_masked_positions(const at::Tensor& length_mask, double ratio, uint64_t seed, int64_t update) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(mix(mix(seed) ^ static_cast<uint64_t>(update)));
  const auto u = at::rand(length_mask.sizes(), gen, at::TensorOptions().dtype(at::kFloat));
  return u.lt(ratio).logical_and(length_mask.to(at::kCPU));
}

TokenLoss masked_token_loss(const at::Tensor& logits, const at::Tensor& ids, const at::Tensor& predicted,
                            int64_t batch) {
  return token_loss(logits, ids, predicted, batch);
}

TokenLoss next_token_loss(const at::Tensor& logits, const at::Tensor& ids, const at::Tensor& length_mask,
                          int64_t batch) {
  const auto L = ids.size(1);
  if (L < 2) throw Error(ErrorKind::data, "next-token pretraining needs inputs of at least two tokens");
  const auto chosen = length_mask.narrow(1, 1, L - 1).logical_and(length_mask.narrow(1, 0, L - 1));
  return token_loss(logits.narrow(1, 0, L - 1), ids.narrow(1, 1, L - 1), chosen, batch);
}

}  // namespace lra::host
