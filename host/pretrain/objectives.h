// pretrain/objectives.h — the two objectives of a self-pretraining phase
// (docs/rules.md "Self-pretraining"), as tensor functions the phase and the
// tests share. Both read inputs alone: no label is an argument.
//   next_token     a mixer that does not read ahead (the summary rule's probe,
//                  rules/summary_position.h) predicts token t+1 from position t;
//   masked_tokens  any other mixer sees a fraction of its input's real tokens
//                  replaced by a learned mask vector and predicts them back.
#pragma once

#include <cstdint>
#include <string>

#include <ATen/Tensor.h>

#include "rules/pretraining_objective.h"

namespace lra::host {

// Which real tokens are masked in update `update` of trial `seed`: each with
// probability `ratio`, drawn for the whole global batch of `rows` inputs
// (paired tasks: 2 x batch, first inputs then second) from a generator of
// (seed, update) alone, so micro-batches, ranks and a resume see the same
// positions. `length_mask`: [rows, L] bool of the global batch.
at::Tensor draw_masked_positions(const at::Tensor& length_mask, double ratio, uint64_t seed, int64_t update);

// Per-input losses summed and divided by `batch`, with the counts a report
// shows: every input's mean over its predicted positions (an input with none
// adds 0), so the sum over micro-batches is the batch's mean whatever the split.
struct TokenLoss {
  at::Tensor loss;       // scalar: sum over inputs of their mean loss / batch
  at::Tensor correct;    // scalar double: sum over inputs of their share predicted right (not divided)
};

// logits [B, L, V]; predicted: [B, L] bool, the masked positions.
TokenLoss masked_token_loss(const at::Tensor& logits, const at::Tensor& ids, const at::Tensor& predicted,
                            int64_t batch);

// logits [B, L, V] at each token; position t predicts ids[t + 1] where both
// are real (length_mask).
TokenLoss next_token_loss(const at::Tensor& logits, const at::Tensor& ids, const at::Tensor& length_mask,
                          int64_t batch);

}  // namespace lra::host
