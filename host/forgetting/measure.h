// forgetting/measure.h — the batched teacher-forced measurement of one
// forgetting curve: for each tested length, R copy and R LM samples, one
// forward pass each, argmax accuracy on the scored half (samples.h), then
// the statistics and memory lengths (stats.h, memory_length.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "forgetting/curve.h"
#include "forgetting/samples.h"

namespace lra::host::forgetting {

// Teacher-forced argmax of a causal LM: ids [B, T] int64 (CPU) -> the argmax
// of the next-token logits at every position, [B, T] int64 (CPU).
using ArgmaxFn = std::function<at::Tensor(const at::Tensor& ids)>;

struct MeasureConfig {
  int64_t max_length = 0;             // l: the longest tested S
  int64_t granularity = 32;           // n
  std::string granularity_type = "linear";
  int64_t repeats = 10;               // R
  SampleConfig samples;               // bos, eos, seed
  int64_t batch_tokens = 1 << 16;     // tokens per forward pass (at least one sample)
  int64_t max_batch = 0;              // > 0: at most this many samples per pass (1 for [1, T]-only models)
};

// Called after each length with the finished point (for progress logs).
using PointCallback = std::function<void(const CurvePoint&, size_t index, size_t count)>;

// Measures every length of the schedule in ascending order. A failure at one
// length (out of memory, a model error) is recorded in that point's `error`
// and the sweep goes on, so the curve is never silently truncated. Returns a
// finalized curve (statistics, fine/coarse lengths, complete flag).
Curve measure_curve(const ArgmaxFn& model, const std::vector<int32_t>& stream, const MeasureConfig& c,
                    const PointCallback& on_point = {});

}  // namespace lra::host::forgetting
