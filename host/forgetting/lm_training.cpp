#include "forgetting/lm_training.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <spdlog/fmt/fmt.h>

#include "common/plugin_calls.h"
#include "lra/status.h"
#include "train/autocast.h"
#include "train/batches.h"
#include "train/training_loop.h"

namespace lra::host::forgetting {

namespace {

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

namespace {

// Next-token prediction on fixed-length windows of the token stream, in one
// seeded permutation per epoch; evaluation is the held-out loss.
class NextTokenObjective final : public TrainingObjective {
 public:
  NextTokenObjective(CausalLM& model, const std::vector<int32_t>& train, const std::vector<int32_t>& test,
                     const LmTrainOptions& o, int64_t windows, LmTrainResult& r)
      : model_(model), train_(train), test_(test), o_(o), order_(windows, static_cast<uint64_t>(o.train.seed)), r_(r) {}

  void start(int64_t updates_done) override { step_ = updates_done; }

  void accumulate_gradients(TrainWindow& w) override {
    ++step_;
    auto starts = order_.next(o_.train.batch_size);
    for (auto& s : starts) s *= o_.seq_len;
    auto batch = gather_windows(train_, starts, o_.seq_len + 1).to(o_.device, /*non_blocking=*/true);
    if (o_.spot_check && o_.spot_check->due()) spot_check(batch.narrow(1, 0, o_.seq_len));
    at::Tensor loss;
    {
      CudaBf16Autocast autocast(o_.bf16 && o_.device.is_cuda());
      loss = next_token_loss(model_, batch, at::Reduction::Mean);
    }
    backward(loss);
    // The report is the mean of the updates' mean losses.
    w.loss += loss.detach().to(torch::kDouble);
    w.count += 1;
  }

  bool has_accuracy() const override { return false; }

  // The causal check on this step's inputs, as the measurement runs the model
  // (evaluation mode, no gradients, the same autocast); afterwards the
  // generators are where the step found them and the model trains again.
  void spot_check(const at::Tensor& input) {
    const GeneratorStates before;
    plugin_calls::set_phase("conformance check", step_);
    {
      torch::NoGradGuard no_grad;
      CudaBf16Autocast autocast(o_.bf16 && o_.device.is_cuda());
      model_->eval();
      struct Train {  // back to training mode however the check ends
        CausalLM& m;
        ~Train() { m->train(); }
      } back{model_};
      o_.spot_check->run([&](const at::Tensor& ids) { return model_->forward(ids); }, input,
                         "at step " + std::to_string(step_));
    }
    before.rewind();
    plugin_calls::set_phase("training", step_);
  }

  std::string evaluate(int64_t, nlohmann::json& h) override {
    auto [loss, tokens] =
        held_out_loss(model_, test_, o_.seq_len, o_.train.eval_batch_size, o_.eval_windows, o_.device, o_.bf16);
    h["test_loss"] = loss;
    r_.test_loss = loss;
    r_.test_tokens = tokens;
    return fmt::format("held-out loss {:.4f} ({:.3f} bits/token)", loss, loss / std::log(2.0));
  }

 private:
  CausalLM& model_;
  const std::vector<int32_t>& train_;
  const std::vector<int32_t>& test_;
  const LmTrainOptions& o_;
  IndexStream order_;
  LmTrainResult& r_;
  int64_t step_ = 0;  // 1-based number of the update being made
};

}  // namespace

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
  NextTokenObjective objective(model, train, test, o, windows, r);
  static_cast<TrainingLoopResult&>(r) = run_training_loop(*model, objective, o, log);
  r.tokens_per_second = r.steps_per_second * static_cast<double>(t.batch_size * o.seq_len);
  return r;
}

}  // namespace lra::host::forgetting
