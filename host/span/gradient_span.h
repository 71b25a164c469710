// The gradient-attribution span, as arithmetic on input gradients: how far
// from a position the inputs lie that a mixer's output there depends on. It
// needs no attention probabilities, so it is defined for every mixer
// (convolutions, state-space layers, retention, ...). Definition and the
// choices it makes: ../../docs/span.md, "Gradient span".
//
// For sequence b, layer l and a sampled query position q (a counted position),
// with y = mixer(x) and a random Gaussian vector u, the weight of key j is
//   w_j = || d<u, y_q> / d x_j ||^2      (an unbiased estimate of the squared
//                                          Frobenius norm of dy_q/dx_j)
// restricted to the counted keys; then
//   row distance = sum_j w_j |q - j| / sum_j w_j
//   row radius   = the smallest r with sum_{|q - j| <= r} w_j >= coverage * sum_j w_j
//   span_b       = mean over (l, sampled q) of the row values; span = mean over sequences.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "span/running_mean.h"

namespace lra::host::span {

// One layer over one batch, per sequence ([B] each, on the weights' device).
// Sums over the sampled query rows, so batches and query draws add up exactly.
struct GradientSums {
  at::Tensor distance;  // float64: sum over rows of the row distance
  at::Tensor radius;    // float64: sum over rows of the row radius
  at::Tensor rows;      // int64: rows with some weight on a counted key
  at::Tensor massless;  // int64: rows whose gradient on every counted key is zero (left out)
};

// weights: [B, L] (any float type, >= 0), the squared gradient norms of one
// query row per sequence; query: [B] int64 positions; counted: [B, L] bool,
// the keys that count (real tokens; an inserted CLS token excluded).
// coverage in (0, 1].
GradientSums gradient_sums(const at::Tensor& weights, const at::Tensor& query, const at::Tensor& counted,
                           double coverage);

// Adds GradientSums of the same B sequences (element-wise; for several query draws).
GradientSums operator+(const GradientSums& a, const GradientSums& b);

struct GradientSummary {
  double distance = 0;              // mean over sequences of span_b (row distances)
  double radius = 0;                // the same for the row radii
  std::vector<double> per_layer_distance, per_layer_radius;  // mean over sequences of the layer's mean over rows
  int64_t sequences = 0;            // sequences with at least one row
  int64_t sequences_without_rows = 0;
  int64_t rows = 0;                 // counted rows over all sequences and layers
  int64_t massless_rows = 0;
};

// Accumulates GradientSums over batches, one entry per layer per batch.
class GradientAccumulator {
 public:
  void add(const std::vector<GradientSums>& layers);
  GradientSummary summary() const;

 private:
  using Mean = RunningMean;
  Mean distance_, radius_;
  std::vector<Mean> layer_distance_, layer_radius_;
  int64_t empty_ = 0, rows_ = 0, massless_ = 0;
};

}  // namespace lra::host::span
