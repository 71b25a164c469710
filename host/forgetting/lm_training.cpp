#include "forgetting/lm_training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include "common/plugin_calls.h"
#include "lra/status.h"
#include "manifest/schedule.h"
#include "train/autocast.h"
#include "train/batches.h"
#include "train/trainer.h"

namespace lra::host::forgetting {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Rows [B, len] of `tokens` starting at the given offsets, as int64.
at::Tensor gather_windows(const std::vector<int32_t>& tokens, const std::vector<int64_t>& starts, int64_t len) {
  auto out = at::empty({static_cast<int64_t>(starts.size()), len}, at::kLong);
  auto* p = out.data_ptr<int64_t>();
  for (size_t i = 0; i < starts.size(); ++i)
    for (int64_t j = 0; j < len; ++j) *p++ = tokens[static_cast<size_t>(starts[i] + j)];
  return out;
}

at::Tensor next_token_loss(CausalLM& model, const at::Tensor& window, at::Reduction::Reduction reduction) {
  auto input = window.narrow(1, 0, window.size(1) - 1);
  auto target = window.narrow(1, 1, window.size(1) - 1);
  auto logits = model->forward(input);
  return torch::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}).to(torch::kFloat), target.reshape({-1}), {},
                                   reduction);
}

}  // namespace

std::pair<double, int64_t> held_out_loss(CausalLM& model, const std::vector<int32_t>& tokens, int64_t seq_len,
                                         int64_t batch, int64_t max_windows, const torch::Device& device, bool bf16) {
  const int64_t available = (static_cast<int64_t>(tokens.size()) - 1) / seq_len;
  if (available < 1)
    throw Error(ErrorKind::data, "the held-out text has " + std::to_string(tokens.size()) +
                                     " tokens, fewer than one window of " + std::to_string(seq_len + 1));
  const int64_t n = std::min(available, max_windows);
  std::vector<int64_t> starts;
  for (int64_t i = 0; i < n; ++i) starts.push_back(i * available / n * seq_len);  // evenly spaced windows
  torch::NoGradGuard no_grad;
  model->eval();
  CudaBf16Autocast autocast(bf16 && device.is_cuda());
  auto sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  for (int64_t first = 0; first < n; first += batch) {
    std::vector<int64_t> part(starts.begin() + first, starts.begin() + std::min(n, first + batch));
    sum += next_token_loss(model, gather_windows(tokens, part, seq_len + 1).to(device), at::Reduction::Sum)
               .to(torch::kDouble);
  }
  model->train();
  const int64_t count = n * seq_len;
  return {sum.item<double>() / static_cast<double>(count), count};
}

LmTrainResult train_causal_lm(CausalLM& model, const std::vector<int32_t>& train, const std::vector<int32_t>& test,
                              const LmTrainOptions& o, spdlog::logger& log) {
  const auto& t = o.train;
  const int64_t windows = (static_cast<int64_t>(train.size()) - 1) / o.seq_len;
  if (windows < t.batch_size)
    throw Error(ErrorKind::data, "the training text has " + std::to_string(train.size()) + " tokens: " +
                                     std::to_string(windows) + " windows of " + std::to_string(o.seq_len + 1) +
                                     ", fewer than one batch of " + std::to_string(t.batch_size) +
                                     "; use a larger --corpus");
  LmTrainResult r;
  model->to(o.device);
  model->train();
  torch::optim::AdamW opt(model->parameters(), adamw_options(t));
  IndexStream order(windows, static_cast<uint64_t>(t.seed));
  LrSchedule schedule(t);
  // Summed on the device and read at report time only: no host-device
  // synchronisation inside the step loop.
  auto window_loss = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(o.device));
  int64_t window_steps = 0;
  const auto start = Clock::now();
  double eval_time = 0;
  const int64_t report_every = std::max<int64_t>(1, std::min<int64_t>(t.eval_every, 50));

  for (int64_t step = 0; step < t.steps; ++step) {
    plugin_calls::set_phase("training", step + 1);  // named by plugin faults (common/plugin_calls.h)
    const double lr = schedule(step);
    for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
    auto starts = order.next(t.batch_size);
    for (auto& s : starts) s *= o.seq_len;
    auto batch = gather_windows(train, starts, o.seq_len + 1).to(o.device, /*non_blocking=*/true);
    opt.zero_grad();
    at::Tensor loss;
    {
      CudaBf16Autocast autocast(o.bf16 && o.device.is_cuda());
      loss = next_token_loss(model, batch, at::Reduction::Mean);
    }
    {
      plugin_calls::Call call("backward");  // the mixers' backward runs here
      loss.backward();
    }
    if (t.grad_clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), t.grad_clip);
    opt.step();
    window_loss += loss.detach().to(torch::kDouble);
    ++window_steps;
    r.steps = step + 1;

    const bool eval_now = (step + 1) % t.eval_every == 0 || step + 1 == t.steps;
    if (!eval_now && (step + 1) % report_every != 0) continue;
    r.final_train_loss = window_loss.item<double>() / static_cast<double>(window_steps);
    if (!std::isfinite(r.final_train_loss))
      throw Error(ErrorKind::internal, "training diverged: the loss is not finite by step " + std::to_string(step + 1));
    window_loss.zero_();
    window_steps = 0;
    const double train_s = seconds_since(start) - eval_time;
    const double sps = static_cast<double>(r.steps) / std::max(train_s, 1e-9);
    nlohmann::json h = {{"step", step + 1}, {"lr", lr}, {"train_loss", r.final_train_loss}};
    if (eval_now) {
      const auto t0 = Clock::now();
      plugin_calls::set_phase("evaluation", step + 1);
      auto [loss_value, tokens] = held_out_loss(model, test, o.seq_len, t.eval_batch_size, o.eval_windows, o.device, o.bf16);
      eval_time += seconds_since(t0);
      h["test_loss"] = loss_value;
      r.test_loss = loss_value;
      r.test_tokens = tokens;
      if (o.live_progress) std::fprintf(stderr, "\n");
      log.info("step {:>6}/{}  lr {:.3e}  train loss {:.4f}  held-out loss {:.4f} ({:.3f} bits/token)  {:.2f} steps/s",
               step + 1, t.steps, lr, r.final_train_loss, loss_value, loss_value / std::log(2.0), sps);
    } else if (o.live_progress) {
      std::fprintf(stderr, "\r  step %lld/%lld  loss %.4f  %.2f steps/s   ", static_cast<long long>(step + 1),
                   static_cast<long long>(t.steps), r.final_train_loss, sps);
      std::fflush(stderr);
    } else {
      log.info("step {:>6}/{}  lr {:.3e}  train loss {:.4f}  {:.2f} steps/s", step + 1, t.steps, lr,
               r.final_train_loss, sps);
    }
    r.history.push_back(std::move(h));
  }
  r.train_seconds = seconds_since(start) - eval_time;
  r.eval_seconds = eval_time;
  r.steps_per_second = static_cast<double>(r.steps) / std::max(r.train_seconds, 1e-9);
  r.tokens_per_second = r.steps_per_second * static_cast<double>(t.batch_size * o.seq_len);
  return r;
}

}  // namespace lra::host::forgetting
