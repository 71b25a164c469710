#include "train/training_loop.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include <c10/util/Exception.h>
#include <spdlog/fmt/fmt.h>

#include "common/out_of_memory.h"
#include "common/plugin_calls.h"
#include "common/text.h"
#include "lra/status.h"
#include "train/checkpoint.h"
#include "train/adamw.h"
#include "train/lr_schedule.h"

namespace lra::host {
namespace {

using Clock = std::chrono::steady_clock;

// Updates run eagerly before the capture (cuBLAS workspaces, kernel choices
// and the optimizer's state exist by then), as PyTorch's CUDA graph recipe does.
constexpr int kEagerUpdatesBeforeCapture = 3;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string format_eta(double s) {
  char buf[32];
  const int total = static_cast<int>(s + 0.5);
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60);
  return buf;
}

// Loads the newest checkpoint that loads and belongs to this run; a corrupt
// one is skipped, saying why. Returns the checkpoint used.
std::filesystem::path load_resume_point(const TrainingLoopOptions& o, torch::nn::Module& model,
                                        torch::optim::Optimizer& opt, spdlog::logger& log) {
  std::vector<std::filesystem::path> candidates{*o.resume_from};
  candidates.insert(candidates.end(), o.resume_fallbacks.begin(), o.resume_fallbacks.end());
  std::string skipped;
  for (const auto& c : candidates) {
    try {
      check_checkpoint_state(c, o.train.steps);
      if (read_checkpoint_state(c).identity != o.identity)
        throw Error(ErrorKind::rules, "it was written by another run (manifest, plugin, options, seed or data)");
      load_checkpoint(c, model, opt, o.device);
      return c;
    } catch (const c10::Error& e) {
      const std::string why = text::first_line(e.what_without_backtrace());
      log.warn("skipping checkpoint {}: it cannot be loaded ({})", c.string(), why);
      skipped += (skipped.empty() ? "" : "; ") + c.filename().string() + ": " + why;
    } catch (const std::exception& e) {
      log.warn("skipping checkpoint {}: {}", c.string(), e.what());
      skipped += (skipped.empty() ? "" : "; ") + c.filename().string() + ": " + e.what();
    }
  }
  throw Error(ErrorKind::data, "--resume: no intact checkpoint under " + o.resume_from->parent_path().string() + " (" +
                                   skipped + "); remove the checkpoints folder to start the run afresh");
}

// The loop's state between updates: what a checkpoint saves and a resume restores.
struct LoopState {
  TrainWindow window;
  TrainingLoopResult result;
};

nlohmann::json progress_of(const LoopState& s, const TrainingObjective& objective) {
  nlohmann::json p = objective.progress();
  p["window_loss"] = s.window.loss.item<double>();
  p["window_correct"] = s.window.correct.item<double>();
  p["window_count"] = s.window.count;
  p["final_train_loss"] = s.result.final_train_loss;
  p["final_train_accuracy"] = s.result.final_train_accuracy;
  p["history"] = s.result.history;
  return p;
}

void restore_progress(LoopState& s, const nlohmann::json& p, TrainingObjective& objective) {
  s.window.loss.fill_(p.at("window_loss").get<double>());
  s.window.correct.fill_(p.at("window_correct").get<double>());
  s.window.count = p.at("window_count").get<double>();
  s.result.final_train_loss = p.at("final_train_loss").get<double>();
  s.result.final_train_accuracy = p.at("final_train_accuracy").get<double>();
  s.result.history = p.at("history");
  objective.restore(p);
}

// Closes the report window: the mean loss (and accuracy) over every rank's
// updates since the last report.
void close_window(LoopState& s, Distributed* dist, int64_t step) {
  double sums[3] = {s.window.loss.item<double>(), s.window.correct.item<double>(), s.window.count};
  if (dist) {
    auto all = torch::tensor({sums[0], sums[1], sums[2]}, torch::kDouble);
    dist->all_reduce_sum({all});
    for (int i = 0; i < 3; ++i) sums[i] = all[i].item<double>();
  }
  s.result.final_train_loss = sums[0] / sums[2];
  s.result.final_train_accuracy = sums[1] / sums[2];
  if (!std::isfinite(s.result.final_train_loss))
    throw Error(ErrorKind::internal, "training diverged: the loss is not finite by step " + std::to_string(step) +
                                         "; no result is written");
  s.window.loss.zero_();
  s.window.correct.zero_();
  s.window.count = 0;
}

}  // namespace

void backward(const at::Tensor& loss) {
  plugin_calls::Call call("backward");
  try {
    loss.backward();
  } catch (const c10::Error&) {
    throw;  // LibTorch's own (an allocation that failed: exit 7)
  } catch (const lra::Error& e) {
    if (e.kind() == ErrorKind::rules || e.kind() == ErrorKind::data || e.kind() == ErrorKind::memory) throw;
    plugin_calls::fail("backward", e.what());
  } catch (const std::exception& e) {
    // Only plugin code puts other exceptions into the graph: a Python mixer's
    // autograd.Function whose backward raised (torch's python_error), say.
    if (is_out_of_memory(e)) throw;
    std::string what = e.what();
    if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    plugin_calls::fail("backward", what);
  }
}

torch::optim::AdamWOptions adamw_options(const TrainConfig& t) {
  return torch::optim::AdamWOptions(0.0).betas({t.beta1, t.beta2}).eps(t.eps).weight_decay(t.weight_decay);
}

TrainingLoopResult run_training_loop(torch::nn::Module& model, TrainingObjective& objective,
                                     const TrainingLoopOptions& o, spdlog::logger& log) {
  const auto& t = o.train;
  model.to(o.device);
  model.train();
  // One AdamW group per optimizer-hint group (train/optimizer_groups.h); each
  // follows the schedule times its factor.
  std::vector<double> lr_factor;
  std::vector<torch::optim::OptimizerParamGroup> param_groups;
  if (o.groups.empty()) {
    param_groups.emplace_back(model.parameters());
    lr_factor.push_back(1.0);
  } else {
    const auto named = model.named_parameters(/*recurse=*/true);
    for (const auto& g : o.groups) {
      if (g.names.empty()) continue;
      std::vector<at::Tensor> params;
      for (const auto& name : g.names) params.push_back(named[name]);
      auto options = adamw_options(t);
      if (g.no_weight_decay) options.weight_decay(0.0);
      param_groups.emplace_back(std::move(params), std::make_unique<torch::optim::AdamWOptions>(options));
      lr_factor.push_back(g.lr_factor);
    }
  }
  HostAdamW opt(std::move(param_groups), adamw_options(t));
  const LrSchedule schedule(t);
  const auto dev_double = torch::TensorOptions().dtype(torch::kDouble).device(o.device);
  LoopState s{{torch::zeros({}, dev_double), torch::zeros({}, dev_double), 0}, {}};
  auto& r = s.result;
  if (o.resume_from) {
    r.resumed_from = load_resume_point(o, model, opt, log);
    const CheckpointState st = read_checkpoint_state(*r.resumed_from);
    r.first_step = st.step;
    restore_progress(s, st.progress, objective);
    log.info("resumed from {} at update {}", r.resumed_from->string(), r.first_step);
  }
  objective.start(r.first_step);
  const bool evaluates = !o.dist || o.dist->rank() == 0;
  const bool accuracy = objective.has_accuracy();
  const auto start = Clock::now();
  const int64_t report_every = std::max<int64_t>(1, std::min<int64_t>(t.eval_every, 50));
  auto last_report = start;
  auto steps_per_s = [&] { return (r.steps - r.first_step) / std::max(seconds_since(start) - r.other_seconds, 1e-9); };
  auto eta = [&](int64_t step, double sps) { return format_eta((t.steps - step - 1) / sps); };

  // CUDA graphs (train/step_graph.h): each update's batch staged into the
  // same tensors, the whole update — passes, clipping, AdamW — captured once
  // after a few eager ones and replayed. A capture that fails goes on
  // eagerly under --cuda-graphs auto, and ends the run under on.
  r.cuda_graphs = o.graphs.words;
  std::optional<UpdateGraph> graph;
  if (o.graphs.capture) {
    if (!objective.fixed_shapes())
      throw Error(ErrorKind::internal, "a CUDA graph was planned for an objective whose shapes change");
    graph.emplace(o.device, kEagerUpdatesBeforeCapture);
    opt.use_device_learning_rates(true);
  }
  const auto staged_update = [&] {
    opt.zero_grad();
    objective.accumulate_staged(s.window);
    if (t.grad_clip > 0) clip_grad_norm(model.parameters(), t.grad_clip);
    opt.step();
  };
  const auto grads_to_none = [&] {  // so the captured backward writes every gradient afresh
    for (auto& p : model.parameters()) p.mutable_grad() = at::Tensor();
  };
  const auto run_staged_update = [&](int64_t step) {
    objective.stage_next_update();
    opt.stage_learning_rates();
    try {
      if (graph->run(staged_update, grads_to_none)) opt.count_replayed_step();
    } catch (const GraphCaptureError& e) {
      if (o.graphs.required) throw;
      // Nothing of the failed capture ran: the same update, eagerly, and every later one.
      log.warn("CUDA graphs: {}; the run goes on without them", e.what());
      r.cuda_graphs = "off: the capture failed at update " + std::to_string(step + 1);
      graph.reset();
      opt.use_device_learning_rates(false);
      grads_to_none();
      staged_update();
    }
    s.window.count += objective.staged_count();
  };
  if (o.device.is_cuda() && !r.cuda_graphs.empty()) log.info("cuda graphs: {}", r.cuda_graphs);

  r.steps = r.first_step;
  std::set<std::string> foreign_warned;  // checkpoint folders pruning left alone, each warned about once
  for (int64_t step = r.first_step; step < t.steps; ++step) {
    plugin_calls::set_phase("training", step + 1);  // named by plugin faults (common/plugin_calls.h)
    // s = updates done before this one, so the very first update uses lr(0).
    const double lr = schedule(step);
    for (size_t i = 0; i < opt.param_groups().size(); ++i)
      static_cast<torch::optim::AdamWOptions&>(opt.param_groups()[i].options()).lr(lr * lr_factor[i]);
    if (graph) {
      run_staged_update(step);  // passes, clipping and AdamW (train/step_graph.h)
    } else {
      opt.zero_grad();
      objective.accumulate_gradients(s.window);
      if (o.dist) {
        // Each rank's loss is its slice's sum over the global batch size, so
        // the summed gradients are exactly the global batch's mean gradient.
        std::vector<at::Tensor> grads;
        for (auto& p : model.parameters())
          if (p.grad().defined()) grads.push_back(p.grad());
        o.dist->all_reduce_sum(grads);
      }
      if (t.grad_clip > 0) clip_grad_norm(model.parameters(), t.grad_clip);
      opt.step();
    }
    if (step == r.first_step) log.info("optimizer: {}", opt.kind());
    r.steps = step + 1;
    if (o.after_update) o.after_update(r.steps);
    if (o.stop_at_update > 0 && r.steps >= o.stop_at_update) {
      r.stopped = true;
      break;
    }

    // Validation after every eval_every updates, the last one included (LRA's
    // loop evaluated one update later and skipped the final model).
    const bool eval_now = (step + 1) % t.eval_every == 0 || step + 1 == t.steps;
    // Reports (which close the averaging window) fall on fixed steps, so a
    // resumed run averages exactly the same steps as an uninterrupted one.
    const bool report_now = eval_now || (step + 1) % report_every == 0;
    if (!report_now && seconds_since(last_report) >= 30) {  // slow runs (official ListOps on CPU) show life
      const double sps = steps_per_s();
      log.info("step {:>6}/{}  {:.2f} steps/s  ETA {}", step + 1, t.steps, sps, eta(step, sps));
      last_report = Clock::now();
    }
    if (report_now) {
      close_window(s, o.dist, step + 1);
      const double sps = steps_per_s();
      const std::string acc = accuracy ? fmt::format(" acc {:.4f}", r.final_train_accuracy) : "";
      if (o.live_progress) {
        std::fprintf(stderr, "\r  step %lld/%lld  loss %.4f%s  %.2f steps/s  ETA %s   ",
                     static_cast<long long>(step + 1), static_cast<long long>(t.steps), r.final_train_loss,
                     accuracy ? fmt::format("  acc {:.3f}", r.final_train_accuracy).c_str() : "", sps,
                     eta(step, sps).c_str());
        std::fflush(stderr);
      }
      nlohmann::json h = {{"step", step + 1}, {"lr", lr}, {"train_loss", r.final_train_loss}};
      if (accuracy) h["train_accuracy"] = r.final_train_accuracy;
      if (eval_now && evaluates) {
        const auto t0 = Clock::now();
        plugin_calls::set_phase("evaluation", step + 1);
        const std::string words = objective.evaluate(step + 1, h);
        r.other_seconds += seconds_since(t0);
        if (o.live_progress) std::fprintf(stderr, "\n");
        log.info("step {:>6}/{}  lr {:.3e}  train loss {:.4f}{}  {}  {:.2f} steps/s", step + 1, t.steps, lr,
                 r.final_train_loss, acc, words, sps);
      } else if (!o.live_progress) {
        log.info("step {:>6}/{}  lr {:.3e}  train loss {:.4f}{}  {:.2f} steps/s  ETA {}", step + 1, t.steps, lr,
                 r.final_train_loss, acc, sps, eta(step, sps));
      }
      r.history.push_back(std::move(h));
      r.report_speeds.emplace_back(step + 1, sps);
      last_report = Clock::now();
    }
    const bool regular = t.checkpoint_every > 0 && (step + 1) % t.checkpoint_every == 0;
    // --stop-after: decided at report steps only (the window is closed there,
    // and every rank reaches them together); one rank's clock is enough.
    bool stop_now = false;
    if (o.stop_after_seconds > 0 && report_now && step + 1 < t.steps) {
      stop_now = seconds_since(start) >= o.stop_after_seconds;
      if (o.dist) {
        const auto flag = torch::full({1}, stop_now ? 1.0f : 0.0f, torch::TensorOptions().device(o.device));
        o.dist->all_reduce_sum({flag});
        stop_now = flag.item<float>() > 0;
      }
    }
    if (!o.run_dir.empty() && (regular || stop_now) && step + 1 < t.steps) {
      const auto t0 = Clock::now();
      for (const auto& dir : save_checkpoint(o.run_dir, {step + 1, o.identity, progress_of(s, objective)}, model, opt))
        if (foreign_warned.insert(dir.string()).second)
          log.warn("not pruning {}: it is not a checkpoint of this run (another run's, incomplete or malformed); "
                   "left as it is", dir.string());
      r.other_seconds += seconds_since(t0);  // not training time
      log.info("checkpoint at update {} ({:.1f} s)", step + 1, seconds_since(t0));
    }
    if (stop_now) {
      r.stopped = true;
      break;
    }
  }
  if (o.live_progress) std::fprintf(stderr, "\n");
  r.train_seconds = seconds_since(start) - r.other_seconds;
  r.steps_per_second = (r.steps - r.first_step) / std::max(r.train_seconds, 1e-9);
  return r;
}

}  // namespace lra::host
