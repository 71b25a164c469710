// bench/task_bench.cpp — see task_bench.h.
#include "bench/task_bench.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "bench/measure_step.h"
#include "bench/remaining_time.h"
#include "bench/report_runs.h"
#include "model/task_shape.h"
#include "common/atomic_file.h"
#include "common/build_info.h"
#include "common/sha256.h"
#include "common/text.h"
#include "common/utc_time.h"
#include "device/device.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "manifest/suites.h"
#include "manifest/releases.h"
#include "plugins/descriptor.h"
#include "plugins/loader.h"
#include "plugins/mixer_factory.h"
#include "plugins/mixer_options.h"
#include "plugins/reference_configuration.h"
#include "results/system_info.h"
#include "train/trainer.h"

namespace lra::host::bench {
namespace {

namespace fs = std::filesystem;

// One (plugin, task) to measure, fully resolved.
struct Planned {
  const LoadedPlugin* plugin = nullptr;
  Manifest manifest;
  lra::Params options;  // the plugin's options as `run` would resolve them (reference settings)
  TaskRunEstimate estimate;
};

// --task: one task, a comma-separated list, or "suite".
std::vector<std::string> bench_tasks(const BenchArgs& a) {
  if (a.task != "suite") return text::split_list(a.task);
  std::vector<std::string> tasks;
  const auto have = preset_tasks(a.preset);
  for (const auto& t : suite_tasks(find_suite("lra")))  // the LRA suite's (bench knows LRA's task shapes)
    if (std::find(have.begin(), have.end(), t) != have.end()) tasks.push_back(t);
  return tasks;
}

// Everything resolved before the first measurement: a typo fails in a second, not after an hour.
std::vector<Planned> plan(const BenchArgs& a) {
  if (a.micro_batch < 0) throw Error(ErrorKind::usage, "--micro-batch must be >= 0 (0 = the whole batch at once)");
  if (a.steps < 1 || a.repeats < 1 || a.warmup < 0)
    throw Error(ErrorKind::usage, "--steps and --repeats must be >= 1 and --warmup >= 0");
  const auto plugins = a.plugins.empty() ? std::vector<std::string>{"transformer"} : text::split_list(a.plugins);
  if (plugins.empty()) throw Error(ErrorKind::usage, "--plugins must name at least one mixer plugin");
  std::vector<const LoadedPlugin*> loaded;
  for (const auto& p : plugins) loaded.push_back(&open_plugin(p, LRA_KIND_MIXER));
  std::vector<Manifest> manifests;
  for (const auto& t : bench_tasks(a)) {
    (void)lra_task_shape(t);  // an unknown task: usage error listing the tasks
    manifests.push_back(load_preset(t, a.preset, a.protocol));
  }
  std::vector<Planned> out;
  for (const LoadedPlugin* p : loaded)
    for (const Manifest& m : manifests) {
      Planned x;
      x.plugin = p;
      x.manifest = m;
      std::map<std::string, std::string> given;  // mixer options as --set would give them
      if (!a.reference.empty()) {
        // As `run --reference` makes it: the entry's manifest settings, then its options.
        std::vector<std::string> overrides;
        const auto c = apply_reference_configuration(a.reference, *p, m.task, x.manifest, &overrides);
        given = with_configuration_options(c, {});
        x.estimate.configuration = c.table->label() + " (entry " + c.entry.label() + ")";
      }
      x.options = resolve_run_mixer_options(*p, given, x.manifest).options;
      auto& e = x.estimate;
      e.plugin = p->descriptor.name;
      e.task = m.task;
      e.preset = a.preset;
      e.manifest = m.name;
      if (const auto r = find_release(m.task, sha256_hex(m.text))) e.release = r->version;
      const Manifest& mm = x.manifest;  // with the configuration's settings
      e.micro_batch = a.micro_batch > 0 && a.micro_batch < mm.train.batch_size ? a.micro_batch : 0;
      e.eval_batch = mm.train.eval_batch_size;
      e.seeds = static_cast<int64_t>(trial_seeds(mm).size());
      e.splits = run_split_sizes(mm);
      e.schedule = run_schedule(mm.train, e.splits);
      if (mm.pretrain.present) e.pretrain_steps = mm.pretrain.train.steps;
      out.push_back(std::move(x));
    }
  return out;
}

void measure(Planned& x, const BenchArgs& a, const c10::Device& device, spdlog::logger& log) {
  const Manifest& m = x.manifest;
  const TaskShape shape = lra_task_shape(m.task);
  StepBenchOptions o;
  o.model = m.model;
  o.train = m.train;
  o.vocab_size = shape.vocab_size;
  o.num_classes = shape.num_classes;
  o.paired = shape.paired;
  o.batch = m.train.batch_size;
  o.micro_batch = x.estimate.micro_batch;
  o.eval_batch = evaluation_pass(o.micro_batch, o.batch, m.train.eval_batch_size);  // as `run` evaluates
  o.eval_batch *= a.eval_pass_factor;  // larger passes than run's, timed (--eval-pass-factor)
  x.estimate.eval_pass = o.eval_batch;
  // Evaluation batches (eval_batch_size examples) per pass: a pass smaller
  // than the batch costs as a full pass each (the last one too); a larger one
  // evaluates several batches at once.
  const double batches_per_pass =
      o.eval_batch >= m.train.eval_batch_size
          ? static_cast<double>(o.eval_batch) / static_cast<double>(m.train.eval_batch_size)
          : 1.0 / static_cast<double>((m.train.eval_batch_size + o.eval_batch - 1) / o.eval_batch);
  o.warmup = a.warmup;
  o.steps = a.steps;
  o.repeats = a.repeats;
  o.device = device;
  o.bf16 = device.is_cuda() && !a.fp32 && m.train.precision != "float32";
  o.cuda_graphs = a.cuda_graphs;
  o.mixer_capabilities = x.plugin->descriptor.capabilities;
  o.seed = static_cast<uint64_t>(m.train.seed);
  const MixerFactory factory = plugin_mixer_factory(*x.plugin, x.options);
  auto& e = x.estimate;
  e.train = measure_training_steps(e.plugin, factory, m.model.max_len, o);
  if (e.train.status == "ok" && e.plugin == "transformer") {
    e.train.flops_per_step = softmax_transformer_flops_per_step(m.model, o.batch, m.model.max_len) * (o.paired ? 2 : 1);
    if (auto peak = peak_flops(device, o.bf16)) e.train.mfu = *e.train.flops_per_step * e.train.steps_per_s / *peak;
  }
  if (e.train.status == "ok") {
    try {
      e.eval_batches_per_s = measure_evaluation_batches(factory, m.model.max_len, o) * batches_per_pass;
    } catch (const std::exception& err) {
      e.train.status = is_out_of_memory(err) ? "oom" : "error";
      e.train.error = "evaluation batch of " + std::to_string(o.eval_batch) + ": " + text::first_line(err.what());
    }
  }
  if (e.train.status == "ok" && e.pretrain_steps > 0) {
    // The first phase: its own batch and optimizer, the host's pretraining head (a
    // next-token step, for mixers that do not read ahead, costs the same decoder).
    StepBenchOptions po = o;
    po.train = pretraining_train_config(m);
    po.batch = po.train.batch_size;
    po.pretrain_mask_ratio = m.pretrain.mask_ratio;
    e.pretrain = measure_training_steps(e.plugin, factory, m.model.max_len, po);
  }
  if (e.ok()) {
    e.prediction = predict_run(e.schedule, e.train.steps_per_s, e.eval_batches_per_s);
    if (e.pretrain_steps > 0) e.prediction.pretrain_s = static_cast<double>(e.pretrain_steps) / e.pretrain.steps_per_s;
    const Spread r = spread_of(e.train);
    log.info("{:<12} {:<11} {:8.3f} steps/s (repetitions {:.3g}-{:.3g})  {:8.3f} eval batches/s  peak {:.2f} GB  one run {}",
             e.plugin, e.task, e.train.steps_per_s, r.min, r.max, e.eval_batches_per_s, e.train.peak_memory_bytes / 1e9,
             human_duration(e.prediction.total_s()));
    if (const std::string w = speed_warning(e.train); !w.empty())
      log.warn("{} on {}: not a clean measurement: {}; measure again before relying on the prediction", e.plugin,
               e.task, w);
  } else {
    const BenchPoint& failed = e.train.status != "ok" ? e.train : e.pretrain;
    log.warn("{:<12} {:<11} {}{}: {}", e.plugin, e.task, failed.status == "oom" ? "OOM" : "FAILED",
             &failed == &e.pretrain ? " (pretraining step)" : "", failed.error);
  }
}

nlohmann::json protocol_json(const BenchArgs& a) {
  return {{"preset", a.preset},
          {"protocol", a.protocol},
          {"warmup_steps", a.warmup},
          {"timed_steps", a.steps},
          {"repetitions", a.repeats},
          {"micro_batch", a.micro_batch},
          {"statistic", "median of the repetitions' rates"},
          {"training_step", "the manifest's batch at max_len (micro-batches accumulated when asked): forward, "
                            "cross-entropy, backward, gradient clipping when the manifest clips, AdamW update"},
          {"evaluation_batch", "train.eval_batch_size examples at max_len in passes of at most the micro-batch (as run "
                               "evaluates), evaluation mode, no gradients"},
          {"prediction", "steps / training steps/s + (validations x batches per validation + test batches) / "
                         "evaluation batches/s; every batch costed as a full one"},
          {"not_included", "data generation or loading (cached after the first run), checkpoint writes, start-up"},
          {"inputs", "random token ids, every position real, resident on the device"}};
}

}  // namespace

BenchOutcome run_task_bench(const BenchArgs& a, spdlog::logger& log) {
  std::vector<Planned> planned = plan(a);
  const c10::Device device = pick_device(a.device);
  checked_graph_request(a.cuda_graphs, device);  // --cuda-graphs on without CUDA: exit 2, nothing written
  const fs::path out = fresh_bench_out(a.out);
  log.info("bench --task {} --preset {} --protocol {}: {} runs to predict, {} warm-up + {} x {} timed steps, {}", a.task, a.preset, a.protocol,
           planned.size(), a.warmup, a.repeats, a.steps, describe_device(device));
  std::vector<TaskRunEstimate> runs;
  const auto start = std::chrono::steady_clock::now();
  // The time left, learnt from the runs measured so far per plugin and length (bench/remaining_time.h).
  std::vector<std::pair<std::string, int64_t>> remaining;
  for (const auto& x : planned) remaining.emplace_back(x.estimate.plugin, x.manifest.model.max_len);
  RemainingTime eta;
  for (auto& x : planned) {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    log.info("{} measuring {} on {}",
             progress_text(runs.size(), planned.size(), elapsed,
                           eta.estimate({remaining.begin() + static_cast<std::ptrdiff_t>(runs.size()), remaining.end()})),
             x.estimate.plugin, x.estimate.task);
    measure(x, a, device, log);
    eta.record(x.estimate.plugin, x.manifest.model.max_len,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - now).count());
    runs.push_back(x.estimate);
  }
  const std::string markdown = run_estimates_markdown(runs);
  nlohmann::json doc = run_estimates_json(runs);
  doc["protocol"] = protocol_json(a);
  doc["host"] = {{"version", build_info().version}, {"git_revision", build_info().git_revision},
                 {"torch_version", host_descriptor().torch_version}};
  doc["system"] = system_info();
  doc["finished_at"] = utc_now();
  write_files_atomic(out, {{"bench.json", doc.dump(2) + "\n"}, {"bench.md", markdown}});
  return {out, markdown};
}

}  // namespace lra::host::bench
