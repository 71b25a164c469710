// The head of a sequence task read from the last state
// (lra::SequenceReadout::from_last_state, SDK 1.5): MAD's AutoEncoder decoder
// (athms/mad-lab mad/model/auto_encoder.py). The encoder's state at each
// example's last real position is the only thing it sees of the example; for
// position p it adds a fixed sinusoidal code of p and runs a small MLP
//   RMSNorm -> Linear(d, d) -> GELU -> RMSNorm -> Linear(d, d) -> GELU -> RMSNorm -> Linear(d, classes),
// so a position's prediction never reads that position's token directly.
#pragma once

#include <cstdint>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

namespace lra::host {

// MAD's posemb_sincos_1d(max_len, d): row p is sin(p w_k) for k < d/2, then
// cos(p w_k), w_k = exp(-k ln(10000) / (d/2 - 1)); an odd d ends with a zero
// column. (LRA's table, sinusoidal_positions, interleaves and scales otherwise.)
torch::Tensor sincos_positions(int64_t max_len, int64_t d);

// Each example's state at its last real position: x [B, L, D], length_mask
// [B, L] (true at real tokens, examples padded at the end) -> [B, D].
torch::Tensor last_states(const torch::Tensor& x, const torch::Tensor& length_mask);

// RMSNorm as MAD's (rmsnorm.py: weight only, ones, eps 1e-5), computed in
// float32 or wider. By hand: LibTorch 1.13's C++ frontend has none (and one
// written here is the same module whatever LibTorch the host is built with).
class RmsNormImpl : public torch::nn::Module {
 public:
  explicit RmsNormImpl(int64_t d, double eps = 1e-5);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

class LastStateDecoderImpl : public torch::nn::Module {
 public:
  // Positions 0..max_len-1 can be decoded.
  LastStateDecoderImpl(int64_t d_model, int64_t num_classes, int64_t max_len);
  // states [..., D] and positions (int64, broadcastable against states'
  // leading dimensions once the code is added): logits [..., num_classes].
  // Scored positions: states [N, D], positions [N]. Every position of a
  // batch: states [B, 1, D], positions [L].
  torch::Tensor forward(const torch::Tensor& states, const torch::Tensor& positions);

 private:
  torch::Tensor pos_;  // [max_len, d_model], fixed (a buffer)
  RmsNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, out{nullptr};
};
TORCH_MODULE(LastStateDecoder);

}  // namespace lra::host
