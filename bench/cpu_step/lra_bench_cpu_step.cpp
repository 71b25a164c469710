// lra_bench_cpu_step: milliseconds per CPU training step of the host's own
// model code, for comparison with the same model written in Python
// (train_step.py next to this file; scripts/bench-cpu-vs-python runs both).
//
// The model is lra::host::Classifier with the built-in reference attention
// (the transformer plugin's math), trained as host/train/trainer.cpp does:
// zero_grad, forward, summed cross-entropy / batch, backward, optional
// gradient clipping, AdamW step. No data loading, no LR schedule, no
// accuracy bookkeeping: only what both implementations must do per step.
//
//   lra_bench_cpu_step --layers 2 --d-model 64 --heads 2 --ffn 128 --length 128 --batch 8 [--trace t.json]
//
// Prints one JSON line: {"impl":"lrahost","ms_per_step":<median of --reps>,...}
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include <unistd.h>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/types.h>  // before clip_grad.h, which is not self-contained in 1.13
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/version.h>

#include "model/backbone.h"
#include "train/trainer.h"

// Present when LibTorch links OpenBLAS (Debian); reported so the script can
// check that both sides ran with the same BLAS thread count.
extern "C" int openblas_get_num_threads() __attribute__((weak));

namespace {

struct Options {
  int64_t layers = 2, d_model = 64, heads = 2, qkv_dim = 0, ffn = 128, length = 128, batch = 8;
  int64_t vocab = 257, classes = 2;  // LRA Text: bytes + 1, two classes
  double dropout = 0.1, attention_dropout = 0.1, grad_clip = 0.0;
  int64_t warmup = 5, steps = 20, reps = 3;
  int threads = 0;        // 0 = every online core, as lrahost's --threads default
  int torch_threads = 0;  // 0 = as configure_cpu_threads decides (1 with OpenBLAS); for experiments
  uint64_t seed = 0;
  std::string trace;  // chrome://tracing file of `steps` extra steps, after the timing
};

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run(const Options& o) {
  const int threads = o.threads > 0 ? o.threads : std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  // The host's own thread split (1 LibTorch thread, `threads` OpenBLAS threads).
  lra::host::configure_cpu_threads(threads);
  if (o.torch_threads > 0) at::set_num_threads(o.torch_threads);
  torch::manual_seed(o.seed);

  lra::host::BackboneSpec spec;
  spec.model.layers = o.layers;
  spec.model.d_model = o.d_model;
  spec.model.heads = o.heads;
  spec.model.qkv_dim = o.qkv_dim > 0 ? o.qkv_dim : o.d_model;
  spec.model.ffn_dim = o.ffn;
  spec.model.dropout = o.dropout;
  spec.model.attention_dropout = o.attention_dropout;
  spec.model.pooling = "cls";
  spec.model.positions = "sinusoidal";
  spec.model.max_len = o.length;
  spec.vocab_size = o.vocab;
  spec.num_classes = o.classes;
  spec.seed = o.seed;
  lra::host::Classifier model(spec, lra::host::make_reference_attention);
  model->train();

  // As the trainer builds it; lr fixed at 1e-3 instead of the schedule.
  torch::optim::AdamW opt(model->parameters(),
                          torch::optim::AdamWOptions(1e-3).betas({0.9, 0.98}).eps(1e-9).weight_decay(0.1));

  // One fixed batch: byte ids 1..256, random lengths in [L/2, L], id 0 after
  // the end (padding, masked out), random labels.
  const int64_t B = o.batch, L = o.length;
  auto ids = torch::randint(1, o.vocab, {B, L}, torch::kLong);
  auto lengths = torch::randint(L / 2, L + 1, {B, 1}, torch::kLong);
  auto mask = torch::arange(L, torch::kLong).unsqueeze(0) < lengths;
  ids.masked_fill_(mask.logical_not(), 0);
  auto labels = torch::randint(0, o.classes, {B}, torch::kLong);

  // Seconds per phase over the timed steps: zero_grad, forward (with the
  // loss), backward, optimizer (with clipping). CPU ops are synchronous, so
  // the clock reads between phases are exact and cost well under 1 us.
  using Clock = std::chrono::steady_clock;
  double phase[4] = {0, 0, 0, 0};
  bool timing = false;
  torch::Tensor loss;
  auto step = [&] {
    const auto t0 = Clock::now();
    opt.zero_grad();
    const auto t1 = Clock::now();
    auto logits = model->forward(ids, mask);
    // Sum / batch, as the trainer writes it (micro-batches sum into one mean).
    loss = torch::cross_entropy_loss(logits, labels, {}, at::Reduction::Sum) / B;
    const auto t2 = Clock::now();
    loss.backward();
    const auto t3 = Clock::now();
    if (o.grad_clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), o.grad_clip);
    opt.step();
    if (timing) {
      const auto t4 = Clock::now();
      phase[0] += std::chrono::duration<double>(t1 - t0).count();
      phase[1] += std::chrono::duration<double>(t2 - t1).count();
      phase[2] += std::chrono::duration<double>(t3 - t2).count();
      phase[3] += std::chrono::duration<double>(t4 - t3).count();
    }
  };

  for (int64_t i = 0; i < o.warmup; ++i) step();
  timing = true;
  std::vector<double> wall_ms, cpu_ms;
  for (int64_t r = 0; r < o.reps; ++r) {
    const double c0 = cpu_seconds();
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < o.steps; ++i) step();
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    wall_ms.push_back(1e3 * wall / static_cast<double>(o.steps));
    cpu_ms.push_back(1e3 * (cpu_seconds() - c0) / static_cast<double>(o.steps));
  }
  timing = false;
  if (!o.trace.empty()) {
    // LibTorch's autograd profiler, every op of `steps` steps; not timed.
    torch::autograd::profiler::RecordProfile guard(o.trace);
    for (int64_t i = 0; i < o.steps; ++i) step();
  }
  const double timed_steps = static_cast<double>(o.steps * o.reps);

  nlohmann::json j;
  j["impl"] = "lrahost";
  j["ms_per_step"] = median(wall_ms);
  j["ms_per_step_reps"] = wall_ms;
  j["cpu_ms_per_step"] = median(cpu_ms);  // CPU time of every thread, BLAS spinning included
  j["phase_ms"] = {{"zero_grad", 1e3 * phase[0] / timed_steps}, {"forward", 1e3 * phase[1] / timed_steps},
                   {"backward", 1e3 * phase[2] / timed_steps}, {"optimizer", 1e3 * phase[3] / timed_steps}};
  j["final_loss"] = loss.item<double>();
  j["parameters"] = lra::host::count_parameters(*model);
  j["config"] = {{"layers", o.layers}, {"d_model", o.d_model}, {"heads", o.heads},
                 {"qkv_dim", spec.model.qkv_dim}, {"ffn", o.ffn}, {"length", o.length},
                 {"batch", o.batch}, {"vocab", o.vocab}, {"classes", o.classes},
                 {"dropout", o.dropout}, {"attention_dropout", o.attention_dropout},
                 {"grad_clip", o.grad_clip}, {"warmup", o.warmup}, {"steps", o.steps}, {"reps", o.reps}};
  j["torch_threads"] = at::get_num_threads();
  j["blas_threads"] = openblas_get_num_threads ? openblas_get_num_threads() : -1;
  j["torch_version"] = TORCH_VERSION;
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Milliseconds per CPU training step of lrahost's Classifier (reference attention)"};
  // A repeated flag overrides the earlier one (as argparse does on the Python side).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--layers", o.layers, "encoder blocks")->capture_default_str();
  app.add_option("--d-model", o.d_model, "model width")->capture_default_str();
  app.add_option("--heads", o.heads, "attention heads")->capture_default_str();
  app.add_option("--qkv-dim", o.qkv_dim, "total query/key/value width (0 = d-model)")->capture_default_str();
  app.add_option("--ffn", o.ffn, "feed-forward width")->capture_default_str();
  app.add_option("--length", o.length, "tokens per example, without the CLS the host adds")->capture_default_str();
  app.add_option("--batch", o.batch, "examples per step")->capture_default_str();
  app.add_option("--vocab", o.vocab, "vocabulary size")->capture_default_str();
  app.add_option("--classes", o.classes, "output classes")->capture_default_str();
  app.add_option("--dropout", o.dropout, "dropout")->capture_default_str();
  app.add_option("--attention-dropout", o.attention_dropout, "dropout on attention probabilities")
      ->capture_default_str();
  app.add_option("--grad-clip", o.grad_clip, "global gradient-norm clip (0 = off, as LRA Text)")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed steps first")->capture_default_str();
  app.add_option("--steps", o.steps, "timed steps per repetition")->capture_default_str();
  app.add_option("--reps", o.reps, "repetitions; the median is reported")->capture_default_str()->check(
      CLI::PositiveNumber);
  app.add_option("--threads", o.threads, "CPU threads (0 = all online cores)")->capture_default_str();
  app.add_option("--torch-threads", o.torch_threads,
                 "override LibTorch's intra-op threads (0 = the host's choice: 1 with OpenBLAS)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the weights and the batch")->capture_default_str();
  app.add_option("--trace", o.trace, "write a chrome://tracing profile of --steps more steps to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lra_bench_cpu_step: %s\n", e.what());
    return 1;
  }
}
