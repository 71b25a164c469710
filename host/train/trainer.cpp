#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>

#include <ATen/Parallel.h>
#include <spdlog/fmt/fmt.h>

#include "common/plugin_calls.h"
#include "lra/dropout.h"
#include "lra/status.h"
#include "train/autocast.h"
#include "train/batches.h"
#include "train/prefetch.h"
#include "train/training_loop.h"

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

// Consecutive batches of `split` on the device, in evaluation mode without
// gradients, and the model's float32 logits for each: per example, or with a
// sequence task's `targets` at the batch's scored positions (row-major).
// fn(batch, the batch's example indices, logits) runs under the same autocast.
template <class Fn>
void for_each_eval_batch(Classifier& model, const lra::Split& split, const lra::SplitTargets* targets, int64_t max_len,
                         int64_t batch_size, const torch::Device& device, bool bf16, Fn&& fn) {
  torch::NoGradGuard no_grad;
  model->eval();
  const auto n = static_cast<int64_t>(split.size());
  std::vector<int64_t> idx;
  for (int64_t start = 0; start < n; start += batch_size) {
    idx.clear();
    for (int64_t i = start; i < std::min(n, start + batch_size); ++i) idx.push_back(i);
    auto b = make_batch(split, idx, max_len, targets).to(device);
    CudaBf16Autocast autocast(bf16 && device.is_cuda());
    const auto logits = targets ? model->scored_logits(b.ids, b.mask, b.targets)
                                : model->forward(b.ids, b.mask, b.ids2, b.mask2);
    fn(b, idx, logits.to(torch::kFloat));
  }
  model->train();
}

// A sequence task's evaluation: loss and accuracy over the scored positions,
// whole examples right, and both per cell.
EvalResult evaluate_positions(Classifier& model, const lra::Split& split, const lra::SplitTargets& targets,
                              const std::vector<std::string>& cell_names, int64_t max_len, int64_t batch_size,
                              const torch::Device& device, bool bf16) {
  const auto n = static_cast<int64_t>(split.size());
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  std::vector<CellScore> cells(targets.cells.empty() ? 0 : cell_names.size());
  for (size_t c = 0; c < cells.size(); ++c) cells[c].name = cell_names[c];
  int64_t positions = 0, correct = 0, examples_right = 0;
  for_each_eval_batch(
      model, split, &targets, max_len, batch_size, device, bf16,
      [&](const Batch& b, const std::vector<int64_t>& idx, const torch::Tensor& logits) {
        const auto scored = b.targets.ne(lra::kIgnoreTarget);
        const auto wanted = b.targets.index({scored});
        loss_sum += torch::cross_entropy_loss(logits, wanted, {}, at::Reduction::Sum).to(torch::kDouble);
        // Per example: scored positions and right ones (the row of each scored position).
        const auto rows = scored.nonzero().select(1, 0);
        const auto right = logits.argmax(-1).eq(wanted).to(torch::kLong);
        const auto B = static_cast<int64_t>(idx.size());
        auto per_scored = torch::zeros({B}, torch::TensorOptions().dtype(torch::kLong).device(device));
        auto per_right = torch::zeros_like(per_scored);
        per_scored.index_add_(0, rows, torch::ones_like(right));
        per_right.index_add_(0, rows, right);
        const auto s_cpu = per_scored.to(torch::kCPU), r_cpu = per_right.to(torch::kCPU);
        const auto* sp = s_cpu.data_ptr<int64_t>();
        const auto* rp = r_cpu.data_ptr<int64_t>();
        for (int64_t j = 0; j < B; ++j) {
          positions += sp[j];
          correct += rp[j];
          const bool whole = sp[j] == rp[j];
          examples_right += whole;
          if (!cells.empty()) {
            auto& cell = cells[targets.cells[idx[j]]];
            ++cell.examples;
            cell.positions += sp[j];
            cell.correct_positions += rp[j];
            cell.correct_examples += whole;
          }
        }
      });
  EvalResult r;
  r.count = n;
  r.positions = positions;
  r.loss = positions ? loss_sum.item<double>() / positions : 0.0;
  r.accuracy = positions ? static_cast<double>(correct) / positions : 0.0;
  r.example_accuracy = n ? static_cast<double>(examples_right) / n : 0.0;
  r.cells = std::move(cells);
  return r;
}

}  // namespace

EvalResult evaluate_split(Classifier& model, const lra::Dataset& data, const lra::Split& split, int64_t max_len,
                          int64_t batch_size, const torch::Device& device, bool bf16) {
  return evaluate(model, split, max_len, batch_size, device, bf16, split_targets(data, split), data.sequence.cell_names);
}

EvalResult evaluate(Classifier& model, const lra::Split& split, int64_t max_len, int64_t batch_size,
                    const torch::Device& device, bool bf16, const lra::SplitTargets* targets,
                    const std::vector<std::string>& cell_names) {
  if (targets) return evaluate_positions(model, split, *targets, cell_names, max_len, batch_size, device, bf16);
  // Summed on the device, read once at the end: no synchronisation per batch.
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  const auto n = static_cast<int64_t>(split.size());
  for_each_eval_batch(model, split, nullptr, max_len, batch_size, device, bf16,
                      [&](const Batch& b, const std::vector<int64_t>&, const torch::Tensor& logits) {
                        loss_sum += torch::cross_entropy_loss(logits, b.labels, {}, at::Reduction::Sum).to(torch::kDouble);
                        correct += logits.argmax(-1).eq(b.labels).sum();
                      });
  return {loss_sum.item<double>() / n, static_cast<double>(correct.item<int64_t>()) / n, n};
}

std::vector<int32_t> predict(Classifier& model, const lra::Split& split, int64_t max_len, int64_t batch_size,
                             const torch::Device& device, bool bf16) {
  if (model->per_position())
    throw Error(ErrorKind::rules, "predictions per example are for classification tasks; a sequence task's model is "
                                  "scored per position (evaluate)");
  std::vector<int32_t> out;
  out.reserve(split.size());
  for_each_eval_batch(model, split, nullptr, max_len, batch_size, device, bf16,
                      [&](const Batch&, const std::vector<int64_t>&, const torch::Tensor& logits) {
    const auto pred = logits.argmax(-1).to(torch::kCPU);
    const auto acc = pred.accessor<int64_t, 1>();
    for (int64_t i = 0; i < acc.size(0); ++i) out.push_back(static_cast<int32_t>(acc[i]));
  });
  return out;
}

PositionCounts count_right_positions(Classifier& model, const lra::Split& split, const lra::SplitTargets& targets,
                                     int64_t max_len, int64_t batch_size, const torch::Device& device, bool bf16) {
  PositionCounts out;
  out.correct.assign(split.size(), 0);
  out.positions.assign(split.size(), 0);
  for_each_eval_batch(model, split, &targets, max_len, batch_size, device, bf16,
                      [&](const Batch& b, const std::vector<int64_t>& idx, const torch::Tensor& logits) {
    const auto scored = b.targets.ne(lra::kIgnoreTarget);
    const auto right = logits.argmax(-1).eq(b.targets.index({scored})).contiguous().to(torch::kCPU);
    const auto rows = scored.nonzero().select(1, 0).contiguous().to(torch::kCPU);
    const auto* rp = rows.data_ptr<int64_t>();
    const auto* ok = right.data_ptr<bool>();
    for (int64_t k = 0; k < rows.size(0); ++k) {
      ++out.positions[idx[rp[k]]];
      out.correct[idx[rp[k]]] += ok[k] ? 1 : 0;
    }
  });
  return out;
}

namespace {

// The LRA classification objective: cross-entropy over shuffled batches cut
// on a background thread, gradients accumulated over micro-batches, the best
// validation accuracy tracked.
class ClassifierObjective final : public TrainingObjective {
 public:
  ClassifierObjective(Classifier& model, const lra::Dataset& data, const TrainerOptions& o, TrainResult& r)
      : model_(model), data_(data), o_(o), r_(r), stream_(static_cast<int64_t>(data.train.size()), o.train.seed) {}

  void start(int64_t updates_done) override {
    const auto& t = o_.train;
    // The data order is a function of the seed and the number of batches
    // drawn: replaying the draws puts the stream where the run stopped.
    for (int64_t i = 0; i < updates_done; ++i) stream_.next(t.batch_size);
    // Data parallel: every rank draws the same global batch from the stream
    // and keeps its own contiguous slice of it.
    const int world = o_.dist ? o_.dist->world_size() : 1, rank = o_.dist ? o_.dist->rank() : 0;
    local_batch_ = t.batch_size / world;
    prefetch_.emplace(
        [this, rank] {
          auto idx = stream_.next(o_.train.batch_size);
          std::vector<int64_t> mine(idx.begin() + rank * local_batch_, idx.begin() + (rank + 1) * local_batch_);
          const lra::SplitTargets* targets = split_targets(data_, data_.train);
          Batch b = make_batch(data_.train, mine, o_.max_len, targets);
          if (targets) b.scored_positions = scored_positions(data_.train, *targets, idx, o_.max_len);
          return b;
        },
        4, o_.device.is_cuda());
  }

  void accumulate_gradients(TrainWindow& w) override {
    auto b = prefetch_->next();
    const int64_t micro = o_.micro_batch > 0 ? std::min(o_.micro_batch, local_batch_) : local_batch_;
    // One dropout seed per update, drawn alike on every rank; each pass says
    // which examples of the global batch it holds, so the masks (lra/dropout.h)
    // do not depend on the number of ranks or micro-batches.
    const uint64_t dropout_seed = lra::ops::detail::draw_cpu_seed();
    if (b.targets.defined()) return accumulate_positions(w, b, micro, dropout_seed, rank_first());
    classification_passes(w, b, dropout_seed);
    w.count += static_cast<double>(local_batch_);
  }

  // CUDA graphs (train/step_graph.h): a classification task's batches all
  // have the same shapes; each is copied into the staged tensors, which the
  // passes read, captured or not.
  bool fixed_shapes() const override { return !data_.is_sequence_task(); }
  void stage_next_update() override {
    auto b = prefetch_->next();
    staged_seed_ = lra::ops::detail::draw_cpu_seed();  // as accumulate_gradients draws it
    if (staged_.ids.defined())
      staged_.copy_from(b);
    else
      staged_ = b.to(o_.device);  // allocated once, by an eager update before any capture
  }
  void accumulate_staged(TrainWindow& w) override { classification_passes(w, staged_, staged_seed_); }
  double staged_count() const override { return static_cast<double>(local_batch_); }

  // Forward and backward of a classification batch (this rank's part of the
  // update), micro-batch by micro-batch; loss and correct predictions summed into `w` on the device.
  void classification_passes(TrainWindow& w, const Batch& b, uint64_t dropout_seed) {
    const auto& t = o_.train;
    const int64_t micro = o_.micro_batch > 0 ? std::min(o_.micro_batch, local_batch_) : local_batch_;
    for (int64_t first = 0; first < local_batch_; first += micro) {
      const int64_t n = std::min(micro, local_batch_ - first);
      auto mb = b.narrow(first, n).to(o_.device);
      torch::Tensor logits, loss;
      {
        const lra::ops::DropoutRows rows(dropout_seed, rank_first() + first, n, t.batch_size);
        CudaBf16Autocast autocast(bf16());
        logits = model_->forward(mb.ids, mb.mask, mb.ids2, mb.mask2).to(torch::kFloat);
        // Sum over the micro-batch divided by the whole batch: the accumulated
        // gradient is that of the mean loss over the batch.
        loss = torch::cross_entropy_loss(logits, mb.labels, {}, at::Reduction::Sum) / t.batch_size;
      }
      backward(loss);
      w.loss += loss.detach().to(torch::kDouble) * t.batch_size;
      w.correct += logits.argmax(-1).eq(mb.labels).sum().to(torch::kDouble);
    }
  }

  // A sequence task: cross-entropy over the scored positions, averaged over
  // those of the whole batch (every rank and micro-batch alike).
  void accumulate_positions(TrainWindow& w, const Batch& b, int64_t micro, uint64_t dropout_seed, int64_t rank_first) {
    const auto& t = o_.train;
    const double scored = static_cast<double>(std::max<int64_t>(1, b.scored_positions));
    for (int64_t first = 0; first < local_batch_; first += micro) {
      const int64_t n = std::min(micro, local_batch_ - first);
      auto mb = b.narrow(first, n).to(o_.device);
      torch::Tensor logits, loss, wanted;
      {
        const lra::ops::DropoutRows rows(dropout_seed, rank_first + first, n, t.batch_size);
        CudaBf16Autocast autocast(bf16());
        logits = model_->scored_logits(mb.ids, mb.mask, mb.targets).to(torch::kFloat);
        wanted = mb.targets.index({mb.targets.ne(lra::kIgnoreTarget)});
        loss = torch::cross_entropy_loss(logits, wanted, {}, at::Reduction::Sum) / scored;
      }
      backward(loss);
      w.loss += loss.detach().to(torch::kDouble) * scored;
      w.correct += logits.argmax(-1).eq(wanted).sum().to(torch::kDouble);
      w.count += static_cast<double>(wanted.size(0));
    }
  }

  bool has_accuracy() const override { return true; }

  std::string evaluate(int64_t step, nlohmann::json& h) override {
    auto v = evaluate_split(model_, data_, data_.val, o_.max_len, o_.eval_pass(), o_.device, bf16());
    h["val_loss"] = v.loss;
    h["val_accuracy"] = v.accuracy;
    if (v.accuracy > r_.best_val_accuracy || r_.best_val_step < 0) {
      r_.best_val_accuracy = v.accuracy;
      r_.best_val_step = step;
    }
    if (o_.on_validation) o_.on_validation(step, v);
    return fmt::format("val loss {:.4f} acc {:.4f}", v.loss, v.accuracy);
  }

  nlohmann::json progress() const override {
    return {{"best_val_accuracy", r_.best_val_accuracy}, {"best_val_step", r_.best_val_step}};
  }
  void restore(const nlohmann::json& p) override {
    r_.best_val_accuracy = p.at("best_val_accuracy").get<double>();
    r_.best_val_step = p.at("best_val_step").get<int64_t>();
  }

 private:
  bool bf16() const { return o_.bf16 && o_.device.is_cuda(); }
  // This rank's first example in the global batch.
  int64_t rank_first() const { return (o_.dist ? o_.dist->rank() : 0) * local_batch_; }

  Classifier& model_;
  const lra::Dataset& data_;
  const TrainerOptions& o_;
  TrainResult& r_;
  IndexStream stream_;
  int64_t local_batch_ = 0;
  std::optional<BatchPrefetcher> prefetch_;  // built in start(), after the stream is positioned
  Batch staged_;               // CUDA graphs: the batch every update's passes read
  uint64_t staged_seed_ = 0;
};

}  // namespace

TrainResult train_and_evaluate(Classifier& model, const lra::Dataset& data, const TrainerOptions& o,
                               spdlog::logger& log) {
  TrainResult r;
  ClassifierObjective objective(model, data, o, r);
  static_cast<TrainingLoopResult&>(r) = run_training_loop(*model, objective, o, log);
  if (r.stopped) return r;  // --stop-after: checkpointed, tested when a resumed run finishes

  // Test on the final parameters, as LRA's image tasks do and as its ListOps
  // test-only run was meant to (the restore there is reported broken).
  const bool evaluates = !o.dist || o.dist->rank() == 0;
  const auto t0 = std::chrono::steady_clock::now();
  plugin_calls::set_phase("evaluation", r.steps);
  if (evaluates)
    r.test = evaluate_split(model, data, data.test, o.max_len, o.eval_pass(), o.device, o.bf16 && o.device.is_cuda());
  r.eval_seconds = r.other_seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (evaluates && r.test.positions > 0)
    log.info("test loss {:.4f} accuracy {:.4f} over {} scored positions of {} examples ({:.4f} of the examples "
             "wholly right)",
             r.test.loss, r.test.accuracy, r.test.positions, r.test.count, r.test.example_accuracy);
  else if (evaluates)
    log.info("test loss {:.4f} accuracy {:.4f} over {} examples", r.test.loss, r.test.accuracy, r.test.count);
  return r;
}

}  // namespace lra::host
