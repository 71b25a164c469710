#include "runs/train_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include <spdlog/sinks/basic_file_sink.h>

#include "common/text.h"
#include "common/build_info.h"
#include "common/dir_lock.h"
#include "common/ed25519.h"
#include "common/plugin_calls.h"
#include "common/sha256.h"
#include "common/utc_time.h"
#include "common/atomic_file.h"
#include "curves/learning_curves.h"
#include "data/task_data.h"
#include "device/blas_kernels.h"
#include "device/device.h"
#include "distributed/distributed.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "model/backbone.h"
#include "common/python_source_files.h"
#include "reference/reference_mixers.h"
#include "model/summary_probe.h"
#include "plugins/conformance.h"
#include "plugins/descriptor.h"
#include "plugins/mixer_factory.h"
#include "plugins/mixer_options.h"
#include "results/result.h"
#include "results/run_result.h"
#include "results/signature.h"
#include "results/system_info.h"
#include "rules/rules.h"
#include "runs/not_learning_warning.h"
#include "runs/run_directory.h"
#include "runs/run_model.h"
#include "runs/run_plan.h"
#include "runs/sequence_model.h"
#include "runs/official_registry.h"
#include "plugins/reference_configuration.h"
#include "pretrain/fine_tuning_start.h"
#include "pretrain/pretraining_phase.h"
#include "train/adamw.h"
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/module_io.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The task's data (generated on demand for synthetic tasks); a closed run
// only on the official data (the registry carries its sizes and, for
// generated tasks, its fingerprint).
LoadedData load_run_data(const RunArgs& a, RunPlan& p, int threads, spdlog::logger& log) {
  const auto root = data_root(a.data_dir);
  log.info("task {}: loading data under {}", a.task, root.string());
  LoadedData data = load_task_data(*p.task, p.manifest.data, root, threads, true, p.manifest.source);
  const auto& d = data.dataset;
  log.info("data: {} train / {} val / {} test from {}", d.train.size(), d.val.size(), d.test.size(), d.source);
  log.info("data fingerprint: {}", data.fingerprint);
  if (p.release && p.division.name == "closed")
    if (auto why = data_differs_from_official(*p.release, setting_name(p.manifest), d.train.size(), d.val.size(),
                                              d.test.size(), data.fingerprint, is_lra_release_source(d.source)))
      p.division.open_because(*why);
  return data;
}

// run.log (rank 0) and the lines that say what this run is.
void start_run_log(const RunArgs& a, const RunPlan& p, const RunDirectory& dir, spdlog::logger& log) {
  if (p.ranks.rank == 0) {
    // --resume continues the log of the interrupted run; a new run starts it.
    log.sinks().push_back(
        std::make_shared<spdlog::sinks::basic_file_sink_mt>((dir.out / "run.log").string(), /*truncate=*/!a.resume));
    plugin_calls::set_log_file((dir.out / "run.log").string());  // errors and crashes end run.log too
  }
  for (const auto& w : dir.warnings) log.warn("{}", w);
  log.info("lrahost {} — {} on {} ({} preset, {} division), seed {}, run dir {}", build_info().version,
           p.mixer->descriptor.name, a.task, a.manifest ? "custom" : a.preset, p.division.name, p.manifest.train.seed,
           dir.out.string());
  if (p.release && p.division.name == "closed")
    log.info("official manifest: release {}{}", p.release->version,
             p.release->current ? "" : " (superseded by " + p.release->superseded_by + ")");
  if (p.release && !p.release->note.empty()) log.info("release note: {}", p.release->note);
  if (const auto point = grid_point(p.manifest); !point.empty())
    log.info("grid point: {} (a point of the manifest's [grid] is the protocol's own setting)", text::join(point, ", "));
  if (!p.manifest.settings.empty())
    log.info("setting: {} (one of the manifest's [settings], the protocol's own variants)", setting_name(p.manifest));
  for (const auto& r : p.division.reasons) log.info("open division: {}", r);
  if (p.configuration)
    log.info("reference configuration: {}; settings {}", describe_reference_configuration(p.configuration_record),
             p.configuration_record["settings"].dump());
  // Logged once run.log exists, so the file says which settings the mixer ran with.
  if (const auto what = describe_reference_settings(p.resolved.reference_settings); !what.empty())
    log.info("mixer options: {}", what);
}

// The device, the process group when several ranks run, and the ranks' agreement.
std::unique_ptr<Distributed> join_ranks(const RunPlan& p, const RunDirectory& dir, torch::Device& device,
                                        spdlog::logger& log) {
  if (device.is_cuda() && p.ranks.world_size > 1) device = torch::Device(torch::kCUDA, p.ranks.local_rank);
  // A job of one rank started as data parallel (WORLD_SIZE=1, torchrun
  // --nproc-per-node 1) joins a group of one, as PyTorch does, so the group's
  // path (Gloo, NCCL, the all-reduce) runs as with several; a plain process
  // or a one-task Slurm step stays single.
  const bool launched = p.ranks.source == "torch environment" || p.ranks.source == "torchrun";
  if (p.ranks.world_size == 1 && !launched) return nullptr;
  auto dist = std::make_unique<Distributed>(p.ranks, device);
  log.info("data parallel: rank {} of {} ({}, {}), {} examples per rank per step", p.ranks.rank, p.ranks.world_size,
           dist->backend(), p.ranks.source, p.manifest.train.batch_size / p.ranks.world_size);
  // Ranks agree or nobody trains: what each was started with, compared field by field.
  nlohmann::json agreed = dir.identity;
  agreed["config"] = to_json(p.manifest);
  require_identical_ranks(*dist, agreed);
  return dist;
}

// Everything a run's result.json says, gathered from the run's parts.
struct RunFacts {
  const RunArgs& args;
  const RunPlan& plan;
  const LoadedData& data;
  const BuiltModel& built;
  const TrainerOptions& trainer;
  const TrainResult& trained;
  const Distributed* dist;
  int threads;
  std::string model_sha256, started_at;
  Clock::time_point wall_start;
  nlohmann::json state_size;  // a sequence task's (run_state_size), else null
};

RunResultFacts run_record(const RunFacts& f) {
  const auto& p = f.plan;
  const auto& d = f.data.dataset;
  const auto& desc = p.mixer->descriptor;
  RunResultFacts r;
  r.division = p.division;
  r.torch_version = host_descriptor().torch_version;
  r.system = system_info();
  r.plugin = {desc.name, desc.version, desc.file.string(), p.mixer->sha256, static_cast<int>(desc.abi_major),
              static_cast<int>(desc.abi_minor), params_json(p.resolved.options), p.resolved.reference_settings,
              capability_names(desc.capabilities), f.built.total_params, f.built.model->mixer_parameters(),
              p.mixer->source};
  r.task = {f.args.task, p.task->descriptor.version, p.manifest.source, p.choices.manifest_sha256,
            p.release ? std::optional<std::string>(p.release->version) : std::nullopt,
            f.args.manifest ? std::nullopt : std::optional<std::string>(f.args.preset), f.data.fingerprint, d.source,
            params_json(f.data.params), d.train.size(), d.val.size(), d.test.size(), is_lra_release_source(d.source),
            f.data.split_fingerprints};
  r.budget = f.built.budget;
  r.seed = p.manifest.train.seed;
  r.ranks = {p.ranks.world_size, f.dist ? f.dist->backend() : "none", p.ranks.source};
  r.overrides = p.choices.overrides;
  r.reference_configuration = p.configuration_record;
  r.config = to_json(p.manifest);
  r.optimizer = optimizer_record(f.built.groups, p.manifest.train.weight_decay);
  r.model_sha256 = f.model_sha256;
  r.model_summary = summary_position_name(f.built.summary);
  const auto& t = f.trained;
  r.metrics = {t.test.accuracy, t.test.loss, t.best_val_accuracy, t.final_train_loss, t.final_train_accuracy,
               majority_rate(d, d.test), t.best_val_step};
  r.metrics.sequence = sequence_metrics(d, t.test);
  r.history = t.history;
  r.state_size = f.state_size;
  const auto& device = f.trainer.device;
  r.timing = {std::chrono::duration<double>(Clock::now() - f.wall_start).count(), t.train_seconds, t.eval_seconds,
              t.steps_per_second, t.steps, peak_memory_bytes(device),
              f.trainer.micro_batch > 0 ? f.trainer.micro_batch : p.manifest.train.batch_size,
              peak_memory_kind(device), describe_device(device), f.trainer.bf16 ? "bfloat16 autocast" : "float32",
              f.threads,
              t.resumed_from ? std::optional<std::string>(t.resumed_from->filename().string()) : std::nullopt,
              device.is_cpu() ? blas_kernels_name() : std::string(),
              device.is_cuda() ? t.cuda_graphs : std::string()};
  r.command_line = f.args.command_line;
  r.started_at = f.started_at;
  r.finished_at = utc_now();
  return r;
}

// The summary of a run --stop-after ended, in either phase: `steps` of
// `total` done, the checkpoint to --resume from under `checkpoints`.
RunSummary stopped_summary(const RunArgs& a, const RunPlan& plan, int64_t steps, int64_t total,
                           const std::filesystem::path& checkpoints, double train_seconds, double steps_per_second,
                           spdlog::logger& log) {
  RunSummary stop;
  stop.plugin = plan.mixer->descriptor.name;
  stop.task = a.task;
  stop.division = plan.division.name;
  stop.configuration = describe_reference_configuration(plan.configuration_record);
  stop.stopped = true;
  stop.steps_done = steps;
  stop.total_steps = total;
  stop.checkpoint = checkpoints / ("step-" + std::to_string(steps));
  stop.train_seconds = train_seconds;
  stop.steps_per_second = steps_per_second;
  // The last line of run.log, where suite and sweep --collect look.
  log.info("stopped by --stop-after {} s at update {} of {} with a checkpoint in {}; run the same command with "
           "--resume to continue",
           a.stop_after, steps, total, stop.checkpoint.string());
  return stop;
}

// The first phase of a self-pretrained run, on the model the fine-tuning will train.
PretrainingOutcome pretrain_phase(const RunArgs& a, const RunPlan& plan, const BuiltModel& built,
                                  const LoadedData& data, const RunDirectory& dir, const torch::Device& device,
                                  Distributed* dist, bool lead, double stop_after_seconds, spdlog::logger& log) {
  PretrainingOptions po;
  po.manifest = plan.manifest;
  po.objective = objective_for(built.summary);
  po.device = device;
  po.micro_batch = a.micro_batch;
  po.bf16 = device.is_cuda() && !a.fp32 && plan.manifest.train.precision != "float32";
  po.live_progress = static_cast<bool>(isatty(STDERR_FILENO)) && lead;
  po.dist = dist;
  po.run_dir = dir.out;
  po.writes = lead;
  po.identity = dir.identity;
  po.resume = a.resume;
  po.stop_after_seconds = stop_after_seconds;
  const auto mixers = built.model->mixers();
  const std::string name = plan.mixer->descriptor.name;
  const int abi_minor = plan.mixer->descriptor.abi_minor;
  po.make_groups = [mixers, name, abi_minor](const torch::nn::Module& model, const TrainConfig& t) {
    return optimizer_groups(model, mixers, abi_minor, name, t);
  };
  Classifier model = built.model;
  return run_pretraining(model, data.dataset, po, log);
}

}  // namespace

std::optional<RunSummary> train_run(const RunArgs& a, spdlog::logger& log) {
  const auto wall_start = Clock::now();
  const std::string started_at = utc_now();
  const int threads = effective_threads(a.threads);
  configure_cpu_threads(threads);
  if (a.out) check_output_dir_argument(*a.out);  // a file, or empty: exit 2 before any work
  // A key that cannot sign is exit 2 before any work, not after hours of training.
  const std::optional<Ed25519PrivateKey> sign_key =
      a.sign_key ? std::optional<Ed25519PrivateKey>(load_ed25519_private_key(*a.sign_key)) : std::nullopt;

  RunPlan plan = plan_run(a);
  torch::Device device = pick_device(a.device);  // join_ranks picks the rank's GPU on it
  const GraphRequest graph_request = checked_graph_request(a.cuda_graphs, device);  // before any work
  const LoadedData data = load_run_data(a, plan, threads, log);
  const BuiltModel built = build_model(plan, data.dataset, a.device, log);
  // Before the run directory: a capture asked for that cannot be done is exit 2 with nothing written.
  const GraphPlan graphs = plan_step_graph(
      {graph_request, device.is_cuda(), cuda_graphs_compiled(),
       {{plan.mixer->descriptor.name, plan.mixer->descriptor.capabilities}}, !data.dataset.is_sequence_task(),
       fused_optimizer_enabled(), plan.isolated != nullptr, plan.ranks.world_size > 1});
  if (graphs.refused)
    throw Error(ErrorKind::usage, "--cuda-graphs on: this run's updates cannot be captured (" +
                                      graphs.words.substr(graphs.words.find(": ") + 2) + "); use --cuda-graphs auto");
  RunDirectory dir;
  open_run_directory(dir, a, plan, data);
  start_run_log(a, plan, dir, log);
  // A Python mixer: the run keeps the sources it runs, and is judged by them
  // whatever becomes of the working files (common/python_source_files.h).
  if (plan.ranks.rank == 0 && plan.mixer->source.is_object()) {
    copy_python_sources(plan.mixer->descriptor.file.string(), plan.mixer->source, dir.out);
    log.info("Python sources kept in {} ({} file(s)): verify, submit and span judge the run by them",
             (dir.out / kRunSourceCopyDir).string(), plan.mixer->source["files"].size());
  }

  if (device.is_cpu())
    if (const std::string blas = describe_blas_kernels(); !blas.empty())
      log.info("cpu: {} thread{}, {}", threads, threads == 1 ? "" : "s", blas);
  const auto dist = join_ranks(plan, dir, device, log);
  const bool lead = plan.ranks.rank == 0;  // only rank 0 writes the run directory
  const auto& m = plan.manifest;
  TrainerOptions topts;
  topts.train = m.train;
  topts.device = device;
  topts.live_progress = static_cast<bool>(isatty(STDERR_FILENO)) && lead;
  topts.dist = dist.get();
  if (lead) topts.run_dir = dir.out;  // only rank 0 checkpoints
  topts.identity = dir.identity;
  topts.resume_from = dir.resume_from;
  topts.resume_fallbacks = dir.resume_fallbacks;
  topts.max_len = m.model.max_len;
  topts.micro_batch = a.micro_batch;
  topts.bf16 = device.is_cuda() && !a.fp32 && m.train.precision != "float32";
  topts.graphs = graphs;
  Classifier model = built.model;
  topts.groups = built.groups;
  // --stop-after counts the process's wall time (data and model included), as a job's time limit does.
  if (a.stop_after > 0)
    topts.stop_after_seconds =
        std::max(1e-3, a.stop_after - std::chrono::duration<double>(Clock::now() - wall_start).count());
  // A run that is not learning says so while it trains, not only in its final number.
  const lra::SplitTargets* val_targets = split_targets(data.dataset, data.dataset.val);
  const auto val_count =
      val_targets ? scored_positions(data.dataset.val, *val_targets, all_examples(data.dataset.val), m.model.max_len)
                  : static_cast<int64_t>(data.dataset.val.size());
  NotLearningWarning not_learning(m.train.steps, val_count, majority_rate(data.dataset, data.dataset.val), log,
                                  val_targets != nullptr);
  if (lead)
    topts.on_validation = [&not_learning](int64_t step, const EvalResult& v) {
      not_learning.on_validation(step, v.accuracy);
    };
  // Self-pretraining (manifest [pretrain]): the first phase, then the
  // fine-tuning from exactly its weights (their hash is part of the identity
  // every fine-tuning checkpoint carries).
  std::optional<PretrainingOutcome> pretrained;
  if (m.pretrain.present) {
    pretrained = pretrain_phase(a, plan, built, data, dir, device, dist.get(), lead, topts.stop_after_seconds, log);
    if (pretrained->stopped) return stopped_summary(a, plan, pretrained->steps, pretraining_train_config(m).steps,
                                                    dir.out / kPretrainingDir / "checkpoints", 0, 0, log);
    topts.identity["pretrained_weights_sha256"] = pretrained->record.value("weights_sha256", std::string());
    // Fine-tuned on a classifier built afresh with the pretrained weights, so
    // no state a mixer keeps outside its tensors (a count of its forwards)
    // carries over from the first phase: the same start whether the run goes
    // on, resumes after that phase or is replayed by a verifier.
    {
      Classifier fresh = built.rebuild();
      copy_module_state(*model, *fresh);
      model = fresh;
      topts.groups = built.groups_of(model);
    }
    seed_fine_tuning(m.train.seed);
    // The weights after the first updates, which the verifier trains again
    // from encoder.pt (pretrain/fine_tuning_start.h). Written before any
    // checkpoint of a later update, so a run resumed past it still has it.
    const int64_t replayed = replayed_updates(m.train.steps);
    const fs::path start_file = dir.out / kPretrainingDir / kFineTuningStartWeights;
    if (lead)
      topts.after_update = [&model, replayed, start_file](int64_t updates) {
        if (updates != replayed) return;
        const fs::path tmp = start_file.string() + ".tmp";
        save_module(*model, tmp);
        fs::rename(tmp, start_file);
      };
    if (a.stop_after > 0)
      topts.stop_after_seconds =
          std::max(1e-3, a.stop_after - std::chrono::duration<double>(Clock::now() - wall_start).count());
  }
  const TrainResult tr = train_and_evaluate(model, data.dataset, topts, log);
  const auto finish_isolated = [&] {
    if (!plan.isolated) return;  // run --isolate: what the mixer process cost, and what it printed
    const auto& st = plan.isolated->process().stats();
    log.info("mixer process: {} calls, {:.0f} MiB across, {:.1f} s waiting for answers; its output in {}", st.calls,
             static_cast<double>(st.bytes) / (1 << 20), st.seconds, (dir.out / "mixer-process.log").string());
    plan.isolated->finish(dir.out / "mixer-process.log");
  };
  if (tr.stopped) {
    finish_isolated();
    return stopped_summary(a, plan, tr.steps, m.train.steps, dir.out / "checkpoints", tr.train_seconds,
                           tr.steps_per_second, log);
  }
  if (!lead) {
    finish_isolated();
    return std::nullopt;  // rank 0 evaluates and writes the results
  }

  save_module(*model, dir.out / "model.pt");  // the final model, for `lrahost span` and reuse
  // A sequence task's model: the bytes its mixers keep per sequence when decoding, measured on the trained
  // model after its test (the suites plot accuracy against it), while an isolated run's mixer process is up.
  nlohmann::json state_size;
  if (data.dataset.is_sequence_task()) {
    state_size = run_state_size(model, m.model, plan.mixer->descriptor, data.dataset.test, device,
                                static_cast<uint64_t>(m.train.seed));
    if (state_size.value("measured", false))
      for (const auto& s : state_size["per_length"])
        log.info("state size: {} bytes per sequence after {} tokens", with_commas(s["bytes"].get<int64_t>()),
                 s["length"].get<int64_t>());
    else
      log.info("state size: not measured ({})", state_size.value("why", std::string()));
  }
  finish_isolated();
  // The weights' hash ties model.pt to this result (submit, verify --reevaluate).
  const RunFacts facts{a, plan, data, built, topts, tr, dist.get(), threads, sha256_file(dir.out / "model.pt"),
                       started_at, wall_start, state_size};
  RunResultFacts record = run_record(facts);
  if (pretrained) {
    record.pretraining = pretrained->record;
    const fs::path start_file = dir.out / kPretrainingDir / kFineTuningStartWeights;
    if (!fs::is_regular_file(start_file))
      throw Error(ErrorKind::data, start_file.string() + " is missing: the fine-tuning's weights after its first " +
                                       std::to_string(replayed_updates(m.train.steps)) +
                                       " updates were removed after they were written; run again without --resume");
    record.pretraining["fine_tuning_start"] = {
        {"updates", replayed_updates(m.train.steps)},
        {"weights_file", std::string(kPretrainingDir) + "/" + kFineTuningStartWeights},
        {"weights_sha256", sha256_file(start_file)}};
  }
  // Sealed with a digest and written atomically, last.
  nlohmann::json sealed = seal(run_result_json(record));
  if (sign_key) sealed["signature"] = sign_digest(*sign_key, sealed["digest"].get<std::string>());
  // The learning curves beside it (curves/learning_curves.h), with this process's measured speeds.
  {
    const std::map<int64_t, double> speeds(tr.report_speeds.begin(), tr.report_speeds.end());
    const LearningCurve curve = learning_curve(sealed, (dir.out / "result.json").string(), speeds);
    if (pretrained) {  // both phases: the pretraining's curve first, each row naming its phase
      const std::map<int64_t, double> first(pretrained->report_speeds.begin(), pretrained->report_speeds.end());
      const LearningCurve phase1 = pretraining_curve(sealed, (dir.out / "result.json").string(), first);
      write_files_atomic(dir.out, {{"history.csv", phases_history_csv({{"pretraining", phase1}, {"fine-tuning", curve}})},
                                   {"curves.svg", curves_svg({phase1, curve}, curve.label)}});
    } else {
      write_files_atomic(dir.out, {{"history.csv", history_csv(curve)}, {"curves.svg", curves_svg({curve}, curve.label)}});
    }
  }
  write_result(dir.out, sealed);
  RunSummary summary;
  summary.plugin = plan.mixer->descriptor.name;
  summary.task = a.task;
  summary.division = plan.division.name;
  summary.configuration = describe_reference_configuration(plan.configuration_record);
  summary.test_accuracy = tr.test.accuracy;
  summary.majority_class_rate = record.metrics.majority_class_rate;
  summary.best_val_accuracy = tr.best_val_accuracy;
  summary.test_examples = data.dataset.test.size();
  summary.test_positions = tr.test.positions;
  summary.test_example_accuracy = tr.test.example_accuracy;
  summary.best_val_step = tr.best_val_step;
  summary.train_seconds = tr.train_seconds;
  summary.steps_per_second = tr.steps_per_second;
  summary.result = dir.out / "result.json";
  summary.signer = sign_key ? std::optional<std::string>(sign_key->key_id) : std::nullopt;
  summary.not_learning = not_learning.message();
  const bool unchanged = plan.choices.overrides.size() == plan.choices.configured;  // no --set of a manifest key
  summary.official_protocol = plan.release.has_value() && unchanged;
  summary.unchanged_smoke = is_smoke_manifest(plan.manifest.name) && plan.choices.overrides.empty();
  if (pretrained) {
    const auto& p = pretrained->record;
    summary.pretraining = fmt::format("{}, {} updates, final loss {:.4f}, token accuracy {:.2f}%",
                                      p.value("objective", std::string("?")), p.value("steps", int64_t{0}),
                                      p["metrics"].value("final_train_loss", 0.0),
                                      100 * p["metrics"].value("final_train_accuracy", 0.0));
  }
  return summary;
}

}  // namespace lra::host
