#include "bench/measure_step.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include <torch/optim/adamw.h>

#include "common/text.h"
#include "device/device.h"
#include "pretrain/objectives.h"
#include "pretrain/pretraining_model.h"
#include "train/adamw.h"
#include "train/autocast.h"
#include "train/trainer.h"

namespace lra::host::bench {

double softmax_transformer_flops_per_step(const ModelConfig& m, int64_t batch, int64_t length) {
  const double B = static_cast<double>(batch), L = static_cast<double>(length + (m.pooling == "cls" ? 1 : 0));
  const double d = static_cast<double>(m.d_model), q = static_cast<double>(qkv_width(m)), f = static_cast<double>(m.ffn_dim);
  const double forward = static_cast<double>(m.layers) * (8 * B * L * d * q + 4 * B * L * L * q + 4 * B * L * d * f);
  return 3 * forward;  // backward = 2 x forward
}

namespace {

// The classifier at `length` with fixed random inputs already on the device:
// the protocol times the model, not data loading (which runs on background
// threads in `run`). Every token is real (ids >= 1, an all-true mask).
struct BenchModel {
  Classifier model{nullptr};
  torch::Tensor ids, mask, labels;
  bool paired = false;

  BenchModel(const MixerFactory& make_mixer, int64_t length, int64_t batch, const StepBenchOptions& o) {
    ModelConfig m = o.model;
    m.max_len = length;
    torch::manual_seed(static_cast<uint64_t>(o.seed));
    model = Classifier(BackboneSpec{m, o.vocab_size, o.num_classes, o.seed, o.paired}, make_mixer);
    model->to(o.device);
    paired = o.paired;
    const auto on = torch::TensorOptions().dtype(torch::kLong).device(o.device);
    ids = torch::randint(1, o.vocab_size, {batch, length}, on);
    mask = torch::ones({batch, length}, torch::TensorOptions().dtype(torch::kBool).device(o.device));
    labels = torch::randint(0, o.num_classes, {batch}, on);
  }

  // Retrieval's second document is the same tensor: the cost is that of two encodings.
  torch::Tensor logits(int64_t first, int64_t n, bool bf16) {
    CudaBf16Autocast autocast(bf16);
    auto i = ids.narrow(0, first, n), k = mask.narrow(0, first, n);
    return model->forward(i, k, paired ? i : torch::Tensor(), paired ? k : torch::Tensor())
        .to(torch::kFloat);
  }
};

// `repeats` timed runs of `steps` calls after `warmup` untimed ones: each run's calls/s.
std::vector<double> time_repetitions(const std::function<void()>& call, const StepBenchOptions& o) {
  synchronize_device(o.device);
  reset_peak_memory(o.device);
  for (int64_t i = 0; i < o.warmup; ++i) call();
  synchronize_device(o.device);
  std::vector<double> rates;
  for (int64_t r = 0; r < o.repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < o.steps; ++i) call();
    synchronize_device(o.device);  // the only synchronisation: at the end of a timed run
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(static_cast<double>(o.steps) / s);
  }
  return rates;
}

// The 1-minute load average and the cores, for the spread warnings (bench_point.h).
void record_machine_load(BenchPoint& p) {
  double load[1];
  if (getloadavg(load, 1) == 1) p.load_average = load[0];
  p.cores = static_cast<int64_t>(std::thread::hardware_concurrency());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

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
    BenchModel b(make_mixer, length, o.batch, o);
    p.params = count_parameters(*b.model);
    b.model->train();
    const bool pretraining = o.pretrain_mask_ratio >= 0;
    // The first phase of self-pretraining trains the encoder with the host's head.
    PretrainingModel pre{nullptr};
    torch::Tensor masked;
    if (pretraining) {
      pre = PretrainingModel(b.model, o.vocab_size, o.seed);
      pre->to(o.device);
      const auto rows = b.paired ? torch::cat({b.mask, b.mask}, 0) : b.mask;
      masked = draw_masked_positions(rows, o.pretrain_mask_ratio, o.seed, 0).to(o.device);
    }
    torch::nn::Module& trained = pretraining ? static_cast<torch::nn::Module&>(*pre) : *b.model;
    HostAdamW opt({torch::optim::OptimizerParamGroup(trained.parameters())}, adamw_options(o.train).lr(1e-4));
    // As `run` would: captured in a CUDA graph where its plan says so (train/step_graph.h).
    const GraphPlan graphs = plan_step_graph({parse_graph_request(o.cuda_graphs), o.device.is_cuda(),
                                              cuda_graphs_compiled(), {{plugin, o.mixer_capabilities}},
                                              !pretraining, fused_optimizer_enabled(), false, false});
    if (graphs.refused)
      throw Error(ErrorKind::usage, "--cuda-graphs on: " + plugin + "'s steps cannot be captured (" +
                                        graphs.words.substr(graphs.words.find(": ") + 2) + ")");
    if (o.device.is_cuda()) p.cuda_graphs = graphs.words;
    const int64_t micro = o.micro_batch > 0 ? std::min(o.micro_batch, o.batch) : o.batch;
    const bool bf16 = o.bf16 && o.device.is_cuda();
    // As the trainer's step: summed loss over each micro-batch / the batch, accumulated.
    auto step = [&] {
      opt.zero_grad();
      for (int64_t first = 0; first < o.batch; first += micro) {
        const int64_t n = std::min(micro, o.batch - first);
        torch::Tensor loss;
        if (pretraining) {  // Retrieval: both documents, each its own input
          CudaBf16Autocast autocast(bf16);
          auto i = b.ids.narrow(0, first, n), k = b.mask.narrow(0, first, n);
          auto mk = masked.narrow(0, first, n);
          if (b.paired) {
            i = torch::cat({i, i}, 0);
            k = torch::cat({k, k}, 0);
            mk = torch::cat({mk, masked.narrow(0, o.batch + first, n)}, 0);
          }
          loss = masked_token_loss(pre->forward(i, k, mk), i, mk, o.batch * (b.paired ? 2 : 1)).loss;
        } else {
          loss = torch::cross_entropy_loss(b.logits(first, n, bf16), b.labels.narrow(0, first, n), {},
                                           at::Reduction::Sum) /
                 o.batch;
        }
        loss.backward();
      }
      if (o.train.grad_clip > 0) clip_grad_norm(trained.parameters(), o.train.grad_clip);
      opt.step();
    };
    // Captured during the last warm-up step, so every timed step is a replay.
    std::optional<UpdateGraph> graph;
    if (graphs.capture) {
      graph.emplace(o.device, static_cast<int>(std::max<int64_t>(0, o.warmup - 1)));
      opt.use_device_learning_rates(true);
      opt.stage_learning_rates();  // the rate is constant here
    }
    const auto grads_to_none = [&] {
      for (auto& q : trained.parameters()) q.mutable_grad() = at::Tensor();
    };
    const std::function<void()> call = [&] {
      if (!graph) return step();
      if (graph->run(step, grads_to_none)) opt.count_replayed_step();
    };
    p.repetition_steps_per_s = time_repetitions(call, o);
    record_machine_load(p);
    p.peak_memory_bytes = peak_memory_bytes(o.device);
    p.steps_per_s = median(p.repetition_steps_per_s);
    p.tokens_per_s = p.steps_per_s * static_cast<double>(o.batch * length);
  } catch (const std::exception& e) {
    p.status = is_out_of_memory(e) ? "oom" : "error";
    p.error = text::first_line(e.what());
    p.peak_memory_bytes = peak_memory_bytes(o.device);
  }
  release_cached_memory(o.device);
  return p;
}

double measure_evaluation_batches(const MixerFactory& make_mixer, int64_t length, const StepBenchOptions& o) {
  double rate = 0;
  {
    BenchModel b(make_mixer, length, o.eval_batch, o);
    torch::NoGradGuard no_grad;
    b.model->eval();
    const bool bf16 = o.bf16 && o.device.is_cuda();
    auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(o.device));
    auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(o.device));
    auto batch = [&] {
      auto logits = b.logits(0, o.eval_batch, bf16);
      loss_sum += torch::cross_entropy_loss(logits, b.labels, {}, at::Reduction::Sum).to(torch::kDouble);
      correct += logits.argmax(-1).eq(b.labels).sum();
    };
    rate = median(time_repetitions(batch, o));
  }
  release_cached_memory(o.device);
  return rate;
}

}  // namespace lra::host::bench
