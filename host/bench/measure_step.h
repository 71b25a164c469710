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

namespace lra::host::bench {

struct StepBenchOptions {
  ModelConfig model;         // the Text task's backbone; max_len is set to each length
  TrainConfig train;         // optimizer settings (betas, eps, weight decay, clipping)
  int64_t vocab_size = 257;  // Text: bytes + 1, 0 = padding
  int64_t num_classes = 2;
  int64_t batch = 32;
  int64_t warmup = 3, steps = 10, repeats = 3;
  c10::Device device = c10::kCPU;
  bool bf16 = false;         // bfloat16 autocast (CUDA only)
  uint64_t seed = 0;
};

// One (plugin, length) configuration. An out-of-memory failure is a result
// (status "oom"), any other failure status "error"; neither throws.
BenchPoint measure_training_steps(const std::string& plugin, const MixerFactory& make_mixer, int64_t length,
                                  const StepBenchOptions& o);

// Matrix-multiply FLOPs of one training step (forward x 3) of the classifier
// with full softmax attention: per layer 8·B·L·d·qkv (projections) +
// 4·B·L²·qkv (scores and weighted sum) + 4·B·L·d·ffn (feed-forward).
double softmax_transformer_flops_per_step(const ModelConfig& m, int64_t batch, int64_t length);

}  // namespace lra::host::bench
