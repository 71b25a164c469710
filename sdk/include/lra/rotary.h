// lra/rotary.h — rotary position embedding (RoPE; Su et al. 2021, "RoFormer"),
// the way Llama applies it. Used by mixers when the host asks for rotary
// positions (MixerSpec::rotary_base > 0): the backbone then adds no position
// information of its own, so the mixer must rotate its queries and keys.
#pragma once

#include <ATen/ATen.h>

namespace lra {
inline namespace v1 {
namespace ops {

// x: [B, H, L, Dh] (Dh even). Channel pairs (i, i + Dh/2) of position
// p = offset + l are rotated by the angle p * base^(-2i/Dh) ("rotate half"
// layout, as Hugging Face's Llama). The angles are computed in float32 and
// the result has x's dtype. Dot products of rotated queries and keys depend
// only on the distance between their positions.
inline at::Tensor rotary_embed(const at::Tensor& x, double base, int64_t offset = 0) {
  TORCH_CHECK(x.dim() == 4, "rotary_embed expects [B, H, L, Dh], got ", x.sizes());
  const int64_t L = x.size(2), Dh = x.size(3);
  TORCH_CHECK(Dh % 2 == 0, "rotary positions need an even head width, got ", Dh);
  TORCH_CHECK(base > 0, "rotary base must be > 0");
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(x.device());
  auto inv_freq = at::pow(base, -at::arange(0, Dh, 2, f32) / static_cast<double>(Dh));  // [Dh/2]
  auto angles = at::outer(at::arange(offset, offset + L, f32), inv_freq);                 // [L, Dh/2]
  angles = at::cat({angles, angles}, -1);                                                // [L, Dh]
  auto cos = angles.cos().to(x.scalar_type()), sin = angles.sin().to(x.scalar_type());
  auto first = x.narrow(-1, 0, Dh / 2), second = x.narrow(-1, Dh / 2, Dh / 2);
  auto rotated_half = at::cat({-second, first}, -1);
  return x * cos + rotated_half * sin;
}

// Applies rotary_embed when base > 0, else returns x unchanged: one call a
// mixer can make unconditionally with spec.rotary_base.
inline at::Tensor maybe_rotary(const at::Tensor& x, double base) {
  return base > 0 ? rotary_embed(x, base) : x;
}

}  // namespace ops
}  // namespace v1
}  // namespace lra
