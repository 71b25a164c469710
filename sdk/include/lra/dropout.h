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
//
// Data parallelism: a mask must not depend on how the batch is split over
// ranks (or micro-batches). While the host trains, it describes each forward
// pass (DropoutRows): one seed per update, drawn identically on every rank,
// and which examples of the global batch the pass holds. Each call then takes
// its seed from (that seed, its call number in the pass), and an element's
// decision from its index in the *global* batch: dim 0 is the example (after
// any stacked towers, DropoutTowers), so a tensor of E elements per example
// whose first example is global example f starts at element f * E. A mixer
// that keeps examples on dim 0 ([B, ...], [B*H, ...]) gets this for free.
// Outside such a pass (and in hosts that do not offer it) every call draws its
// seed from the default CPU generator and counts from 0, as before.
#pragma once

#include <cmath>
#include <cstdint>
#include <mutex>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

// The forward pass the host describes, shared across the plugin boundary: the
// host executable defines lra_dropout_rows_v1() (its thread's record); a
// plugin refers to it weakly, so a host without it leaves the pointer null.
extern "C" {
struct lra_dropout_rows {
  uint64_t seed;    // this update's seed (the same on every rank)
  uint64_t calls;   // dropout calls so far in this pass
  int64_t first;    // global index of the pass's first example
  int64_t local;    // examples in this pass
  int64_t global;   // examples in the global batch
  int64_t towers;   // inputs stacked tower by tower along dim 0 (paired models: 2)
  int32_t active;   // nonzero inside a described pass
};
__attribute__((weak, visibility("default"))) struct lra_dropout_rows* lra_dropout_rows_v1(void);
}

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

// The host's record of the current pass, or nullptr outside one.
inline lra_dropout_rows* active_rows() {
  if (!lra_dropout_rows_v1) return nullptr;  // a host (or test) that does not offer it
  lra_dropout_rows* r = lra_dropout_rows_v1();
  return r && r->active ? r : nullptr;
}

// Decisions for the elements [base, base + count) of the global counter
// space into out[0, count): pair q (elements 2q, 2q + 1) is one SplitMix64
// draw, so any split of the space gives the same decisions.
template <typename scalar_t>
void fill_mask(scalar_t* out, int64_t count, uint64_t base, uint64_t seed, uint64_t threshold, scalar_t kept) {
  if (count <= 0) return;
  const uint64_t end = base + static_cast<uint64_t>(count);
  const auto first_pair = static_cast<int64_t>(base / 2), last_pair = static_cast<int64_t>((end - 1) / 2);
  at::parallel_for(first_pair, last_pair + 1, 1 << 14, [&](int64_t begin, int64_t stop) {
    for (int64_t q = begin; q < stop; ++q) {
      const uint64_t r = splitmix64(seed + static_cast<uint64_t>(q + 1) * 0x9e3779b97f4a7c15ULL);
      const uint64_t g = 2 * static_cast<uint64_t>(q);
      if (g >= base) out[g - base] = (r & 0xffffffffULL) < threshold ? kept : scalar_t(0);
      if (g + 1 >= base && g + 1 < end) out[g + 1 - base] = (r >> 32) < threshold ? kept : scalar_t(0);
    }
  });
}

}  // namespace detail

// Describes one forward pass of a data-parallel (or micro-batched) update:
// `seed` the same on every rank for this update, examples
// [first, first + local) of a global batch of `global`. Set by the host's
// trainer; restores the previous description when it ends.
class DropoutRows {
 public:
  DropoutRows(uint64_t seed, int64_t first, int64_t local, int64_t global) {
    if (!lra_dropout_rows_v1 || !(slot_ = lra_dropout_rows_v1())) return;
    saved_ = *slot_;
    *slot_ = {seed, 0, first, local, global, 1, 1};
  }
  ~DropoutRows() {
    if (slot_) *slot_ = saved_;
  }
  DropoutRows(const DropoutRows&) = delete;
  DropoutRows& operator=(const DropoutRows&) = delete;

 private:
  lra_dropout_rows* slot_ = nullptr;
  lra_dropout_rows saved_{};
};

// Within a described pass: the inputs are stacked `towers` times along dim 0
// (tower-major: all examples of the first input, then of the second).
class DropoutTowers {
 public:
  explicit DropoutTowers(int64_t towers) {
    if ((slot_ = detail::active_rows())) {
      saved_ = slot_->towers;
      slot_->towers = towers;
    }
  }
  ~DropoutTowers() {
    if (slot_) slot_->towers = saved_;
  }
  DropoutTowers(const DropoutTowers&) = delete;
  DropoutTowers& operator=(const DropoutTowers&) = delete;

 private:
  lra_dropout_rows* slot_ = nullptr;
  int64_t saved_ = 1;
};

// What keys one dropout call's decisions: its seed and, inside a described
// pass, where the tensor's examples sit in the global batch. A mixer that
// draws its masks piece by piece (recomputing them in backward, say) takes
// one key per call and derives each piece's key with `part`.
struct DropoutKey {
  uint64_t seed = 0;
  int64_t first = 0, local = 0, global = 0, towers = 1;
  bool in_pass = false;  // false: counted from 0, not by example
  DropoutKey part(uint64_t i) const {
    DropoutKey k = *this;
    k.seed = detail::splitmix64(seed + (i + 1) * 0xd1b54a32d192ed03ULL);
    return k;
  }
};

// The next call's key: inside a described pass, from the update's seed and
// the call number; outside one, a draw from the default CPU generator.
inline DropoutKey next_dropout_key() {
  DropoutKey k;
  if (lra_dropout_rows* rows = detail::active_rows()) {
    k.seed = detail::splitmix64(rows->seed + (++rows->calls) * 0x9e3779b97f4a7c15ULL);
    k.first = rows->first, k.local = rows->local, k.global = rows->global, k.towers = rows->towers;
    k.in_pass = true;
  } else {
    k.seed = detail::draw_cpu_seed();
  }
  return k;
}

// A CPU tensor of `sizes` holding 1 / (1 - p) where an element is kept and 0
// where it is dropped (each dropped with probability p), decided by `key`.
inline at::Tensor keyed_dropout_mask(at::IntArrayRef sizes, const at::TensorOptions& options, double p,
                                     const DropoutKey& key) {
  auto mask = at::empty(sizes, options.requires_grad(false).memory_format(at::MemoryFormat::Contiguous));
  const double keep = 1.0 - p;
  const uint64_t threshold = static_cast<uint64_t>(std::llround(keep * 4294967296.0));  // keep iff u < threshold
  const int64_t n = mask.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, mask.scalar_type(), "lra_dropout_mask", [&] {
    scalar_t* out = mask.data_ptr<scalar_t>();
    const scalar_t kept = static_cast<scalar_t>(1.0 / keep);
    const int64_t per_tower = key.in_pass ? key.towers * key.local : 0;
    if (key.in_pass && key.local > 0 && key.towers > 0 && n % per_tower == 0) {
      // Example b of tower t is global example t * global + first + b.
      const int64_t e = n / per_tower, span = key.local * e;
      for (int64_t t = 0; t < key.towers; ++t)
        detail::fill_mask(out + t * span, span, static_cast<uint64_t>((t * key.global + key.first) * e), key.seed,
                          threshold, kept);
    } else {
      detail::fill_mask(out, n, 0, key.seed, threshold, kept);  // not batch-shaped: counted from 0
    }
  });
  return mask;
}

// The mask for one call shaped like `like` (CPU).
inline at::Tensor cpu_dropout_mask(const at::Tensor& like, double p) {
  return keyed_dropout_mask(like.sizes(), like.options(), p, next_dropout_key());
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
