// bench/measure_step.h — times full training steps (forward, loss, backward,
// clipping, AdamW update) of the LRA classifier around one mixer, as the LRA
// paper's Table 2 meant to (its logged steps/s included evaluation): warm-up
// steps excluded, `repeats` timed runs of `steps` steps, the median reported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <c10/core/Device.h>

#include "bench/bench_point.h"
#include "manifest/manifest.h"
#include "model/backbone.h"
#include "train/step_graph.h"

namespace lra::host::bench {

struct StepBenchOptions {
  ModelConfig model;         // the Text task's backbone; max_len is set to each length
  TrainConfig train;         // optimizer settings (betas, eps, weight decay, clipping)
  int64_t vocab_size = 257;  // Text: bytes + 1, 0 = padding
  int64_t num_classes = 2;
  bool paired = false;       // two inputs per example (Retrieval)
  int64_t batch = 32;
  int64_t micro_batch = 0;   // > 0: gradients accumulated over micro-batches of this size, as `run --micro-batch`
  int64_t eval_batch = 0;    // measure_evaluation_batches: examples per forward pass
  int64_t warmup = 3, steps = 10, repeats = 3;
  c10::Device device = c10::kCPU;
  bool bf16 = false;         // bfloat16 autocast (CUDA only)
  // --cuda-graphs: what `run` would do for this plugin (train/step_graph.h);
  // the plan is made per point (the pretraining step, as run's first phase, never captures).
  std::string cuda_graphs = "auto";
  uint32_t mixer_capabilities = 0;  // the measured plugin's bits (graph_safe decides under auto)
  uint64_t seed = 0;
  // >= 0: time the first phase of self-pretraining instead (docs/rules.md
  // "Self-pretraining"): the encoder with the host's pretraining head, this
  // share of tokens masked, the masked-token loss; `train` and `batch` are
  // then the [pretrain] section's.
  double pretrain_mask_ratio = -1;
};

// One (plugin, length) configuration (a pretraining step with
// o.pretrain_mask_ratio >= 0). An out-of-memory failure is a result
// (status "oom"), any other failure status "error"; neither throws.
BenchPoint measure_training_steps(const std::string& plugin, const MixerFactory& make_mixer, int64_t length,
                                  const StepBenchOptions& o);

// Evaluation batches per second of the same classifier: forward passes of
// `o.eval_batch` examples at `length`, in evaluation mode without gradients,
// as the training loop's validation and test passes run them (their loss and
// accuracy sums stay on the device). Times `o.repeats` runs of `o.steps`
// batches after `o.warmup`; the median is returned. Throws on failure.
double measure_evaluation_batches(const MixerFactory& make_mixer, int64_t length, const StepBenchOptions& o);

// Matrix-multiply FLOPs of one training step (forward x 3) of the classifier
// with full softmax attention: per layer 8·B·L·d·qkv (projections) +
// 4·B·L²·qkv (scores and weighted sum) + 4·B·L·d·ffn (feed-forward).
double softmax_transformer_flops_per_step(const ModelConfig& m, int64_t batch, int64_t length);

}  // namespace lra::host::bench
