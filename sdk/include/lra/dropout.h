// lra/dropout.h — inverted dropout for mixers and the host's backbone.
//
// On CUDA this is at::dropout (PyTorch's fused Philox kernel). On the CPU,
// LibTorch 1.13's at::dropout draws every keep/drop decision through
// bernoulli_ — a serial mt19937 loop taking a lock per tensor and a 64-bit
// draw per element, about 6.5 ns an element — which was a quarter of a CPU
// training step of the LRA Text backbone (bench/cpu_step/README.md). Here the
// decisions come from a counter-based generator instead: one 64-bit seed
// drawn from the default CPU generator per call (so torch::manual_seed and the
// checkpointed generator state reproduce every mask), then SplitMix64 of
// (seed, element pair) gives two 32-bit uniforms per 64 bits, compared with
// (1 - p) * 2^32. Keep probability exact to 2^-32, results independent of the
// thread count. 1.56 ns an element with the multiply, against 5.00 for
// at::dropout (build/bin/lra_bench_dropout, 16 M elements, one thread).
#pragma once

#include <cmath>
#include <cstdint>
#include <mutex>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

namespace lra {
inline namespace v1 {
namespace ops {
namespace detail {

// SplitMix64's output function (Steele, Lea and Flood 2014) applied to a Weyl
// sequence: a strong 64-bit mixer, here a hash of (seed, counter).
inline uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One fresh 64-bit seed from the default CPU generator.
inline uint64_t draw_cpu_seed() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<at::CPUGeneratorImpl>()->random64();
}

}  // namespace detail

// A tensor shaped like `like` holding 1 / (1 - p) where an element is kept
// and 0 where it is dropped (each dropped with probability p), no gradient.
inline at::Tensor cpu_dropout_mask(const at::Tensor& like, double p) {
  auto mask = at::empty(like.sizes(), like.options().requires_grad(false).memory_format(at::MemoryFormat::Contiguous));
  const uint64_t seed = detail::draw_cpu_seed();
  const double keep = 1.0 - p;
  const uint64_t threshold = static_cast<uint64_t>(std::llround(keep * 4294967296.0));  // keep iff u < threshold
  const int64_t n = mask.numel(), pairs = (n + 1) / 2;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, mask.scalar_type(), "lra_dropout_mask", [&] {
    scalar_t* out = mask.data_ptr<scalar_t>();
    const scalar_t kept = static_cast<scalar_t>(1.0 / keep), dropped = static_cast<scalar_t>(0);
    at::parallel_for(0, pairs, 1 << 14, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        const uint64_t r = detail::splitmix64(seed + static_cast<uint64_t>(k + 1) * 0x9e3779b97f4a7c15ULL);
        out[2 * k] = (r & 0xffffffffULL) < threshold ? kept : dropped;
        if (2 * k + 1 < n) out[2 * k + 1] = (r >> 32) < threshold ? kept : dropped;
      }
    });
  });
  return mask;
}

// Inverted dropout: in training, each element zeroed with probability p and
// the rest scaled by 1 / (1 - p); otherwise x itself.
inline at::Tensor dropout(const at::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0 || x.numel() == 0) return x;
  if (!x.device().is_cpu() || p >= 1.0) return at::dropout(x, p, /*train=*/true);
  return x * cpu_dropout_mask(x, p);
}

}  // namespace ops
}  // namespace v1
}  // namespace lra
