#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include <ATen/Parallel.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include "common/plugin_calls.h"
#include "lra/status.h"
#include "manifest/schedule.h"
#include "train/autocast.h"
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/prefetch.h"

// Present when LibTorch links OpenBLAS; null otherwise (MKL builds, CUDA wheels).
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace lra::host {

void configure_cpu_threads(int threads) {
  // Measured on 2 cores, smoke preset: 2.4 steps/s with both pools at 2 threads,
  // 4.7 steps/s with LibTorch at 1 and OpenBLAS at 2.
  if (openblas_set_num_threads) {
    openblas_set_num_threads(threads);
    at::set_num_threads(1);
  } else {
    at::set_num_threads(threads);
  }
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string format_eta(double s) {
  char buf[32];
  const int total = static_cast<int>(s + 0.5);
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60);
  return buf;
}

}  // namespace

namespace {

// The model's float32 logits for consecutive batches of `split`, in evaluation mode, without gradients.
template <class Fn>
void for_each_eval_batch(Classifier& model, const lra::Split& split, int64_t max_len, int64_t batch_size,
                         const torch::Device& device, bool bf16, Fn&& fn) {
  torch::NoGradGuard no_grad;
  model->eval();
  const auto n = static_cast<int64_t>(split.size());
  std::vector<int64_t> idx;
  for (int64_t start = 0; start < n; start += batch_size) {
    idx.clear();
    for (int64_t i = start; i < std::min(n, start + batch_size); ++i) idx.push_back(i);
    auto b = make_batch(split, idx, max_len).to(device);
    CudaBf16Autocast autocast(bf16 && device.is_cuda());
    fn(model->forward(b.ids, b.mask, b.ids2, b.mask2).to(torch::kFloat), b.labels);
  }
  model->train();
}

}  // namespace

EvalResult evaluate(Classifier& model, const lra::Split& split, int64_t max_len, int64_t batch_size,
                    const torch::Device& device, bool bf16) {
  // Summed on the device, read once at the end: no synchronisation per batch.
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  const auto n = static_cast<int64_t>(split.size());
  for_each_eval_batch(model, split, max_len, batch_size, device, bf16,
                      [&](const torch::Tensor& logits, const torch::Tensor& labels) {
                        loss_sum += torch::cross_entropy_loss(logits, labels, {}, at::Reduction::Sum).to(torch::kDouble);
                        correct += logits.argmax(-1).eq(labels).sum();
                      });
  return {loss_sum.item<double>() / n, static_cast<double>(correct.item<int64_t>()) / n, n};
}

std::vector<int32_t> predict(Classifier& model, const lra::Split& split, int64_t max_len, int64_t batch_size,
                             const torch::Device& device, bool bf16) {
  std::vector<int32_t> out;
  out.reserve(split.size());
  for_each_eval_batch(model, split, max_len, batch_size, device, bf16, [&](const torch::Tensor& logits, const torch::Tensor&) {
    const auto pred = logits.argmax(-1).to(torch::kCPU);
    const auto acc = pred.accessor<int64_t, 1>();
    for (int64_t i = 0; i < acc.size(0); ++i) out.push_back(static_cast<int32_t>(acc[i]));
  });
  return out;
}

torch::optim::AdamWOptions adamw_options(const TrainConfig& t) {
  return torch::optim::AdamWOptions(0.0).betas({t.beta1, t.beta2}).eps(t.eps).weight_decay(t.weight_decay);
}

TrainResult train_and_evaluate(Classifier& model, const lra::Dataset& data, const TrainerOptions& o,
                               spdlog::logger& log) {
  const auto& t = o.train;
  TrainResult r;
  model->to(o.device);
  model->train();
  torch::optim::AdamW opt(model->parameters(), adamw_options(t));
  IndexStream stream(static_cast<int64_t>(data.train.size()), t.seed);
  int64_t first_step = 0;
  double window_count = 0;
  double resumed_loss = 0, resumed_correct = 0;
  if (o.resume_from) {
    // The newest checkpoint that loads; a corrupt one is skipped, saying why.
    std::vector<std::filesystem::path> candidates{*o.resume_from};
    candidates.insert(candidates.end(), o.resume_fallbacks.begin(), o.resume_fallbacks.end());
    std::string skipped;
    for (const auto& c : candidates) {
      try {
        check_checkpoint_state(c, t.steps);
        if (read_checkpoint_state(c).identity != o.identity)
          throw Error(ErrorKind::rules, "it was written by another run (manifest, plugin, options, seed or data)");
        load_checkpoint(c, *model, opt, o.device);
        r.resumed_from = c;
        break;
      } catch (const c10::Error& e) {
        std::string why = e.what_without_backtrace();
        if (auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
        log.warn("skipping checkpoint {}: it cannot be loaded ({})", c.string(), why);
        skipped += (skipped.empty() ? "" : "; ") + c.filename().string() + ": " + why;
      } catch (const std::exception& e) {
        log.warn("skipping checkpoint {}: {}", c.string(), e.what());
        skipped += (skipped.empty() ? "" : "; ") + c.filename().string() + ": " + e.what();
      }
    }
    if (!r.resumed_from)
      throw Error(ErrorKind::data, "--resume: no intact checkpoint under " + o.resume_from->parent_path().string() + " (" + skipped +
                                       "); remove the checkpoints folder to start the run afresh");
    const CheckpointState st = read_checkpoint_state(*r.resumed_from);
    first_step = st.step;
    const auto& p = st.progress;
    resumed_loss = p.at("window_loss").get<double>();
    resumed_correct = p.at("window_correct").get<double>();
    window_count = p.at("window_count").get<double>();
    r.best_val_accuracy = p.at("best_val_accuracy").get<double>();
    r.best_val_step = p.at("best_val_step").get<int64_t>();
    r.final_train_loss = p.at("final_train_loss").get<double>();
    r.final_train_accuracy = p.at("final_train_accuracy").get<double>();
    r.history = p.at("history");
    // The data order is a function of the seed and the number of batches
    // drawn: replaying the draws puts the stream where the run stopped.
    for (int64_t i = 0; i < first_step; ++i) stream.next(t.batch_size);
    log.info("resumed from {} at update {}", r.resumed_from->string(), first_step);
  }
  // Batches are cut on a background thread, in the stream's order.
  // Data parallel: every rank draws the same global batch from the stream
  // and keeps its own contiguous slice of it.
  const int world = o.dist ? o.dist->world_size() : 1, rank = o.dist ? o.dist->rank() : 0;
  const int64_t local_batch = t.batch_size / world;
  BatchPrefetcher prefetch(
      [&] {
        auto idx = stream.next(t.batch_size);
        std::vector<int64_t> mine(idx.begin() + rank * local_batch, idx.begin() + (rank + 1) * local_batch);
        return make_batch(data.train, mine, o.max_len);
      },
      4, o.device.is_cuda());
  const bool evaluates = rank == 0;
  const bool bf16 = o.bf16 && o.device.is_cuda();

  // Since the last report, summed on the device and read only at report
  // time: the step loop itself never waits for the device.
  const auto dev_double = torch::TensorOptions().dtype(torch::kDouble).device(o.device);
  auto window_loss = torch::full({}, resumed_loss, dev_double), window_correct = torch::full({}, resumed_correct, dev_double);
  const auto start = Clock::now();
  double eval_time = 0;
  const int64_t report_every = std::max<int64_t>(1, std::min<int64_t>(t.eval_every, 50));
  auto last_report = start;

  r.steps = first_step;
  for (int64_t step = first_step; step < t.steps; ++step) {
    plugin_calls::set_phase("training", step + 1);  // named by plugin faults (common/plugin_calls.h)
    // s = updates done before this one, so the very first update uses lr(0).
    const double lr = learning_rate(t, step);
    for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);

    auto b = prefetch.next();
    opt.zero_grad();
    const int64_t micro = o.micro_batch > 0 ? std::min(o.micro_batch, local_batch) : local_batch;
    for (int64_t first = 0; first < local_batch; first += micro) {
      const int64_t n = std::min(micro, local_batch - first);
      auto mb = b.narrow(first, n).to(o.device);
      const auto& labels = mb.labels;
      torch::Tensor logits, loss;
      {
        CudaBf16Autocast autocast(bf16);
        logits = model->forward(mb.ids, mb.mask, mb.ids2, mb.mask2).to(torch::kFloat);
        // Sum over the micro-batch divided by the whole batch: the accumulated
        // gradient is that of the mean loss over the batch.
        loss = torch::cross_entropy_loss(logits, labels, {}, at::Reduction::Sum) / t.batch_size;
      }
      {
        plugin_calls::Call call("backward");  // the mixers' backward runs here
        loss.backward();
      }
      window_loss += loss.detach().to(torch::kDouble) * t.batch_size;
      window_correct += logits.argmax(-1).eq(labels).sum().to(torch::kDouble);
    }
    if (o.dist) {
      // Each rank's loss is its slice's sum over the global batch size, so
      // the summed gradients are exactly the global batch's mean gradient.
      std::vector<at::Tensor> grads;
      for (auto& p : model->parameters())
        if (p.grad().defined()) grads.push_back(p.grad());
      o.dist->all_reduce_sum(grads);
    }
    if (t.grad_clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), t.grad_clip);
    opt.step();
    window_count += local_batch;
    r.steps = step + 1;

    // Validation after every eval_every updates, the last one included (LRA's
    // loop evaluated one update later and skipped the final model).
    const bool eval_now = (step + 1) % t.eval_every == 0 || step + 1 == t.steps;
    // Reports (which close the averaging window) fall on fixed steps, so a
    // resumed run averages exactly the same steps as an uninterrupted one.
    const bool report_now = eval_now || (step + 1) % report_every == 0;
    if (!report_now && seconds_since(last_report) >= 30) {  // slow runs (official ListOps on CPU) show life
      const double train_s = seconds_since(start) - eval_time;
      const double sps = (r.steps - first_step) / std::max(train_s, 1e-9);
      log.info("step {:>6}/{}  {:.2f} steps/s  ETA {}", step + 1, t.steps, sps, format_eta((t.steps - step - 1) / sps));
      last_report = Clock::now();
    }
    if (report_now) {
      double sums[3] = {window_loss.item<double>(), window_correct.item<double>(), window_count};
      if (o.dist) {
        auto all = torch::tensor({sums[0], sums[1], sums[2]}, torch::kDouble);
        o.dist->all_reduce_sum({all});
        for (int i = 0; i < 3; ++i) sums[i] = all[i].item<double>();
      }
      r.final_train_loss = sums[0] / sums[2];
      r.final_train_accuracy = sums[1] / sums[2];
      if (!std::isfinite(r.final_train_loss))
        throw Error(ErrorKind::internal, "training diverged: the loss is not finite by step " + std::to_string(step + 1) +
                                             "; no result is written");
      const double train_s = seconds_since(start) - eval_time;
      const double sps = (r.steps - first_step) / std::max(train_s, 1e-9);
      if (o.live_progress) {
        std::fprintf(stderr, "\r  step %lld/%lld  loss %.4f  acc %.3f  %.2f steps/s  ETA %s   ",
                     static_cast<long long>(step + 1), static_cast<long long>(t.steps), r.final_train_loss,
                     r.final_train_accuracy, sps, format_eta((t.steps - step - 1) / sps).c_str());
        std::fflush(stderr);
      }
      nlohmann::json h = {{"step", step + 1},
                          {"lr", lr},
                          {"train_loss", r.final_train_loss},
                          {"train_accuracy", r.final_train_accuracy}};
      if (eval_now && evaluates) {
        const auto t0 = Clock::now();
        plugin_calls::set_phase("evaluation", step + 1);
        auto v = evaluate(model, data.val, o.max_len, t.eval_batch_size, o.device, bf16);
        eval_time += seconds_since(t0);
        h["val_loss"] = v.loss;
        h["val_accuracy"] = v.accuracy;
        if (v.accuracy > r.best_val_accuracy || r.best_val_step < 0) {
          r.best_val_accuracy = v.accuracy;
          r.best_val_step = step + 1;
        }
        if (o.live_progress) std::fprintf(stderr, "\n");
        log.info("step {:>6}/{}  lr {:.3e}  train loss {:.4f} acc {:.4f}  val loss {:.4f} acc {:.4f}  {:.2f} steps/s",
                 step + 1, t.steps, lr, r.final_train_loss, r.final_train_accuracy, v.loss, v.accuracy, sps);
      } else if (!o.live_progress) {
        log.info("step {:>6}/{}  lr {:.3e}  train loss {:.4f} acc {:.4f}  {:.2f} steps/s  ETA {}", step + 1,
                 t.steps, lr, r.final_train_loss, r.final_train_accuracy, sps,
                 format_eta((t.steps - step - 1) / sps));
      }
      r.history.push_back(std::move(h));
      last_report = Clock::now();
      window_loss.zero_();
      window_correct.zero_();
      window_count = 0;
    }
    if (!o.run_dir.empty() && t.checkpoint_every > 0 && (step + 1) % t.checkpoint_every == 0 && step + 1 < t.steps) {
      const auto t0 = Clock::now();
      CheckpointState st;
      st.step = step + 1;
      st.identity = o.identity;
      st.progress = {{"window_loss", window_loss.item<double>()},
                     {"window_correct", window_correct.item<double>()},
                     {"window_count", window_count},
                     {"best_val_accuracy", r.best_val_accuracy},
                     {"best_val_step", r.best_val_step},
                     {"final_train_loss", r.final_train_loss},
                     {"final_train_accuracy", r.final_train_accuracy},
                     {"history", r.history}};
      save_checkpoint(o.run_dir, st, *model, opt);
      eval_time += seconds_since(t0);  // not training time
      log.info("checkpoint at update {} ({:.1f} s)", step + 1, seconds_since(t0));
    }
  }
  if (o.live_progress) std::fprintf(stderr, "\n");
  r.train_seconds = seconds_since(start) - eval_time;
  r.steps_per_second = (r.steps - first_step) / std::max(r.train_seconds, 1e-9);

  // Test on the final parameters, as LRA's image tasks do and as its ListOps
  // test-only run was meant to (the restore there is reported broken).
  const auto t0 = Clock::now();
  plugin_calls::set_phase("evaluation", r.steps);
  if (evaluates) r.test = evaluate(model, data.test, o.max_len, t.eval_batch_size, o.device, bf16);
  eval_time += seconds_since(t0);
  r.eval_seconds = eval_time;
  if (evaluates) log.info("test loss {:.4f} accuracy {:.4f} over {} examples", r.test.loss, r.test.accuracy, r.test.count);
  return r;
}

}  // namespace lra::host
