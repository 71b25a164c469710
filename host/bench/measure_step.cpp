#include "bench/measure_step.h"

#include <algorithm>
#include <chrono>

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include "device/device.h"
#include "train/autocast.h"
#include "train/trainer.h"

namespace lra::host::bench {

double softmax_transformer_flops_per_step(const ModelConfig& m, int64_t batch, int64_t length) {
  const double B = static_cast<double>(batch), L = static_cast<double>(length + (m.pooling == "cls" ? 1 : 0));
  const double d = static_cast<double>(m.d_model), q = static_cast<double>(m.qkv_dim), f = static_cast<double>(m.ffn_dim);
  const double forward = static_cast<double>(m.layers) * (8 * B * L * d * q + 4 * B * L * L * q + 4 * B * L * d * f);
  return 3 * forward;  // backward = 2 x forward
}

BenchPoint measure_training_steps(const std::string& plugin, const MixerFactory& make_mixer, int64_t length,
                                  const StepBenchOptions& o) {
  BenchPoint p;
  p.plugin = plugin;
  p.length = length;
  p.batch = o.batch;
  p.device = describe_device(o.device);
  p.dtype = o.bf16 ? "bfloat16 autocast" : "float32";
  p.peak_memory_kind = peak_memory_kind(o.device);
  try {
    ModelConfig m = o.model;
    m.max_len = length;
    torch::manual_seed(static_cast<uint64_t>(o.seed));
    Classifier model(BackboneSpec{m, o.vocab_size, o.num_classes, o.seed, false}, make_mixer);
    p.params = count_parameters(*model);
    model->to(o.device);
    model->train();
    torch::optim::AdamW opt(model->parameters(), adamw_options(o.train).lr(1e-4));
    // Fixed random inputs, already on the device: the protocol times the
    // model's step, not data loading (which runs on background threads in `run`).
    const auto on = torch::TensorOptions().dtype(torch::kLong).device(o.device);
    auto ids = torch::randint(1, o.vocab_size, {o.batch, length}, on);
    auto mask = torch::ones({o.batch, length}, torch::TensorOptions().dtype(torch::kBool).device(o.device));
    auto labels = torch::randint(0, o.num_classes, {o.batch}, on);
    auto step = [&] {
      opt.zero_grad();
      torch::Tensor loss;
      {
        CudaBf16Autocast autocast(o.bf16 && o.device.is_cuda());
        loss = torch::cross_entropy_loss(model->forward(ids, mask).to(torch::kFloat), labels);
      }
      loss.backward();
      if (o.train.grad_clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), o.train.grad_clip);
      opt.step();
    };
    synchronize_device(o.device);
    reset_peak_memory(o.device);
    for (int64_t i = 0; i < o.warmup; ++i) step();
    synchronize_device(o.device);
    for (int64_t r = 0; r < o.repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < o.steps; ++i) step();
      synchronize_device(o.device);  // the only synchronisation: at the end of a timed run
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      p.repetition_steps_per_s.push_back(static_cast<double>(o.steps) / s);
    }
    p.peak_memory_bytes = peak_memory_bytes(o.device);
    auto sorted = p.repetition_steps_per_s;
    std::sort(sorted.begin(), sorted.end());
    p.steps_per_s = sorted[sorted.size() / 2];
    p.tokens_per_s = p.steps_per_s * static_cast<double>(o.batch * length);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    p.status = is_out_of_memory(e) ? "oom" : "error";
    p.error = msg;
    p.peak_memory_bytes = peak_memory_bytes(o.device);
  }
  release_cached_memory(o.device);
  return p;
}

}  // namespace lra::host::bench
