// The required attention span of the LRA paper (§2.3), as pure arithmetic on
// attention probabilities: no model, no files. Definition and the choices it
// makes: ../../docs/span.md.
//
// For sequence b, module (layer) l, head h and counted query i:
//   row span = sum_j A'_ij |i - j|,   A' = A restricted to the counted keys, renormalised
//   span_b   = mean over (l, h, i) of the row spans
//   span     = mean over sequences of span_b
// Counted positions are the real tokens, minus position 0 when it is an
// inserted CLS token. Distance is the index distance in the flattened sequence.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "span/running_mean.h"

namespace lra::host::span {

// One attention module over one batch, per sequence and head ([B, H] each,
// on the probabilities' device). Sums, not means, so batches add up exactly.
struct ModuleSums {
  at::Tensor distance;  // float64: sum over counted queries of their row span
  at::Tensor queries;   // int64: counted queries (real, non-CLS, some mass on counted keys)
  at::Tensor massless;  // int64: real, non-CLS queries that put no mass on any counted key (left out)
  at::Tensor excluded;  // float64: sum over counted queries of the mass on excluded keys before renormalising
};

// probs: [B, H, L, L] attention probabilities (rows = queries); any float type.
// valid: [B, L] bool, true at real tokens, aligned with probs' positions.
// first_is_cls: position 0 is an inserted CLS token; its row and column are
// left out whatever `valid` says there. Rows are renormalised over the counted
// keys (a no-op when the mixer already gave padding zero weight).
ModuleSums module_sums(const at::Tensor& probs, const at::Tensor& valid, bool first_is_cls);

// The mask of the sequences the encoder attends over, mirroring the backbone:
// paired inputs (Retrieval) are stacked as [mask; mask2] — each document is its
// own sequence, attention never crosses between them — and a CLS position is
// prepended when the model inserts one. mask2 may be undefined.
at::Tensor encoder_mask(const at::Tensor& mask, const at::Tensor& mask2, bool cls);

struct Summary {
  double span = 0;                          // mean over sequences of span_b
  std::vector<double> per_layer;            // mean over sequences of the layer's mean over (h, i)
  std::vector<std::vector<double>> per_head;  // [layer][head]: mean over sequences of the head's mean over i
  int64_t sequences = 0;                    // sequences with at least one counted query
  int64_t sequences_without_queries = 0;    // e.g. an empty document: left out of every mean
  int64_t queries = 0;                      // counted query rows over all sequences, layers and heads
  int64_t massless_queries = 0;             // rows left out because all their mass was on excluded keys
  double excluded_mass = 0;                 // mean over counted rows of the mass removed before renormalising
};

// Accumulates ModuleSums over batches (all layers of one forward pass at a
// time); the result does not depend on how sequences were grouped into batches
// beyond floating-point rounding.
class Accumulator {
 public:
  // layers[l] = module_sums of layer l for the same B sequences.
  void add(const std::vector<ModuleSums>& layers);
  Summary summary() const;

 private:
  using Mean = RunningMean;
  Mean overall_;
  std::vector<Mean> layer_;
  std::vector<std::vector<Mean>> head_;
  int64_t empty_ = 0, queries_ = 0, massless_ = 0;
  double excluded_ = 0;
};

}  // namespace lra::host::span
