// `lrahost run`: resolve plugin, task and manifest; apply the rule tiers;
// check the parameter budget; train; write the run directory atomically
// enough that a failed run never leaves a result.json behind.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/serialize.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/conformance.h"
#include "cli/mixer_options.h"
#include "cli/official_registry.h"
#include "leaderboard/paper_table.h"
#include "cli/run_support.h"
#include "common/build_info.h"
#include "common/dir_lock.h"
#include "common/plugin_calls.h"
#include "common/ed25519.h"
#include "common/sha256.h"
#include "device/device.h"
#include "data/task_data.h"
#include "distributed/distributed.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "model/backbone.h"
#include "results/result.h"
#include "results/signature.h"
#include "results/system_info.h"
#include "rules/rules.h"
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/module_io.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

// A task is named, never a path: an unknown name is a usage error (exit 2).
const LoadedPlugin& open_task(const std::string& name) {
  auto names = available_plugin_names(LRA_KIND_TASK);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::usage, "unknown task '" + name + "' (available: " + (list.empty() ? "none" : list) +
                                      "; LRA's tasks are listops, text, retrieval, image, pathfinder, pathx)");
  }
  return open_plugin(name, LRA_KIND_TASK);
}

}  // namespace

int run_command(const RunArgs& a) {
  const auto wall_start = std::chrono::steady_clock::now();
  const std::string started_at = utc_now();
  auto log = make_logger();
  const int threads = effective_threads(a.threads);
  configure_cpu_threads(threads);

  if (a.out) check_output_dir_argument(*a.out);  // a file, or empty: exit 2 before any work
  // A key that cannot sign is exit 2 before any work, not after hours of training.
  const std::optional<Ed25519PrivateKey> sign_key =
      a.sign_key ? std::optional<Ed25519PrivateKey>(load_ed25519_private_key(*a.sign_key)) : std::nullopt;
  // 1. Plugins first: a rejected plugin must stop the run before anything else.
  const LoadedPlugin& task = open_task(a.task);
  const LoadedPlugin& mixer = open_plugin(a.plugin, LRA_KIND_MIXER);

  // 2. Manifest, then the rule tiers: fixed keys (open if changed), mixer options (bounded).
  Manifest manifest = a.manifest ? load_manifest_file(*a.manifest) : load_preset(a.task, a.preset);
  if (manifest.task != a.task)
    throw Error(ErrorKind::rules, manifest.source + ": manifest is for task '" + manifest.task + "', not '" + a.task + "'");
  std::optional<ReleasedManifest> release;  // the released official manifest this one is, if any
  RunChoices choices = run_choices(a.task, a.manifest ? "manifest " + manifest.source : "preset '" + a.preset + "'",
                                   manifest.text, &release);
  const auto mixer_sets = apply_sets(a.sets, manifest, &choices.overrides);
  if (a.seed) manifest.train.seed = *a.seed;  // a trial index: recorded, stays closed
  // Data parallel when launched as several ranks; the manifest's global batch is kept.
  const RankInfo ranks = rank_info_from_environment();
  if (manifest.train.batch_size % ranks.world_size != 0)
    throw Error(ErrorKind::usage, "world size " + std::to_string(ranks.world_size) + " does not divide the manifest's "
                                      "global batch train.batch_size = " + std::to_string(manifest.train.batch_size) +
                                      " (each rank trains on batch / world size examples)");
  const bool lead = ranks.rank == 0;  // only rank 0 writes the run directory
  // Built-in mixers start from the task's LRA reference settings (manifests/reference-mixers/), then --set.
  const RunMixerOptions resolved = resolve_run_mixer_options(mixer, mixer_sets, a.task, manifest.name);
  const lra::Params& mixer_options = resolved.options;
  RunDivision division = classify_run(choices);

  // 3. Data (generated on demand for synthetic tasks) and its fingerprint.
  const auto root = data_root(a.data_dir);
  log->info("task {}: loading data under {}", a.task, root.string());
  LoadedData data = load_task_data(task, manifest.data, root, threads, true, manifest.source);
  const auto& info = data.dataset.info;
  log->info("data: {} train / {} val / {} test from {}", data.dataset.train.size(), data.dataset.val.size(),
            data.dataset.test.size(), data.dataset.source);
  log->info("data fingerprint: {}", data.fingerprint);
  // Closed only on the official data (the registry carries its sizes and, for generated tasks, its fingerprint).
  if (release && division.name == "closed")
    if (auto why = data_differs_from_official(*release, data.dataset.train.size(), data.dataset.val.size(),
                                              data.dataset.test.size(), data.fingerprint))
      division.open_because(*why);

  // 4. Models: the reference Transformer sets the budget; checked before training.
  BackboneSpec spec{manifest.model, info.vocab_size, info.num_classes, static_cast<uint64_t>(manifest.train.seed),
                    info.paired};
  torch::manual_seed(manifest.train.seed);
  const int64_t reference_params = count_parameters(*Classifier(spec, make_reference_attention));
  const ParamBudget budget = compute_param_budget(reference_params, manifest.rules.param_budget_ratio);
  torch::manual_seed(manifest.train.seed);
  const MixerFactory make_mixer = plugin_mixer_factory(mixer, mixer_options);
  std::vector<lra::MixerSpec> mixer_specs;  // each block's, for the conformance checks
  Classifier model(spec, recording_specs(make_mixer, &mixer_specs));
  const int64_t total_params = count_parameters(*model);
  log->info("model: {} parameters ({} in the mixers); reference Transformer {}; budget {}", with_commas(total_params),
            with_commas(model->mixer_parameters()), with_commas(reference_params), with_commas(budget.budget));
  enforce_param_budget(budget, total_params, mixer.descriptor.name);
  // The plugin keeps the promises its descriptor makes, at this task's shape (cli/conformance.h).
  log->info("{}", enforce_conformance(mixer.descriptor.name,
                                      check_conformance(mixer.descriptor.capabilities, make_mixer, mixer_specs,
                                                        {2, static_cast<uint64_t>(manifest.train.seed), false, 10000.0,
                                                         pick_device(a.device).str()})));

  // 5. The run directory: created only now that every check passed.
  const std::filesystem::path out =
      a.out ? std::filesystem::path(*a.out)
            : std::filesystem::path("runs") / (a.task + "-" + mixer.descriptor.name + "-" + utc_now("%Y%m%d-%H%M%S"));
  // One writer per run directory (common/dir_lock.h); only rank 0 writes it.
  std::optional<DirLock> lock;
  if (lead) lock.emplace(out);
  if (std::filesystem::exists(out / "result.json"))
    throw Error(ErrorKind::usage, "run directory " + out.string() + " already holds a result.json; choose another --out");
  // What a checkpoint must share with this invocation to be continued by it.
  const nlohmann::json identity = {{"task", a.task},
                                   {"manifest_sha256", choices.manifest_sha256},
                                   {"overrides", choices.overrides},
                                   {"plugin", mixer.descriptor.name},
                                   {"plugin_sha256", mixer.sha256},
                                   {"mixer_options", params_json(mixer_options)},
                                   {"seed", manifest.train.seed},
                                   {"data_fingerprint", data.fingerprint}};
  std::vector<std::string> warnings;  // logged once run.log exists
  if (lock && !lock->stale_note().empty()) warnings.push_back(lock->stale_note());
  const CheckpointList checkpoints = list_checkpoints(out);
  for (const auto& [dir, why] : checkpoints.ignored)
    warnings.push_back("ignoring " + dir.string() + ": " + why + " (not a checkpoint this host wrote)");
  std::optional<std::filesystem::path> resume_from;
  std::vector<std::filesystem::path> resume_fallbacks;
  if (a.resume) {
    if (!a.out) throw Error(ErrorKind::usage, "--resume needs --out DIR, the run directory to continue");
    if (checkpoints.complete.empty())
      throw Error(ErrorKind::usage, "--resume: " + out.string() + " holds no complete checkpoint (checkpoints/step-N/)");
    // The newest checkpoint whose state.json fits this run's manifest; older
    // ones are the fallbacks when its tensors turn out unreadable.
    std::string skipped;
    for (auto it = checkpoints.complete.rbegin(); it != checkpoints.complete.rend(); ++it) {
      if (resume_from) {
        resume_fallbacks.push_back(it->second);
        continue;
      }
      try {
        check_checkpoint_state(it->second, manifest.train.steps);
        resume_from = it->second;
      } catch (const Error& e) {
        warnings.push_back("skipping checkpoint " + it->second.string() + ": " + e.what());
        skipped += std::string(skipped.empty() ? "" : "; ") + e.what();
      }
    }
    if (!resume_from)
      throw Error(ErrorKind::data, "--resume: no intact checkpoint in " + (out / "checkpoints").string() + " (" +
                                       skipped + "); remove the checkpoints folder to start the run afresh");
    const auto stored = read_checkpoint_state(*resume_from).identity;
    for (const auto& [key, value] : identity.items())
      if (!stored.contains(key) || stored[key] != value)
        throw Error(ErrorKind::rules, "--resume: " + resume_from->string() + " was written with " + key + " = " +
                                          (stored.contains(key) ? stored[key].dump() : "(none)") + ", this run has " +
                                          value.dump() + "; resume with the same manifest, plugin, options and seed");
  } else if (!checkpoints.complete.empty()) {
    throw Error(ErrorKind::usage, "run directory " + out.string() + " holds checkpoints of an unfinished run; pass "
                                  "--resume to continue it or choose another --out");
  }
  if (lead) {
    // --resume continues the log of the interrupted run; a new run starts it.
    log->sinks().push_back(
        std::make_shared<spdlog::sinks::basic_file_sink_mt>((out / "run.log").string(), /*truncate=*/!a.resume));
    plugin_calls::set_log_file((out / "run.log").string());  // errors and crashes end run.log too
  }
  for (const auto& w : warnings) log->warn("{}", w);
  log->info("lrahost {} — {} on {} ({} preset, {} division), seed {}, run dir {}", build_info().version,
            mixer.descriptor.name, a.task, a.manifest ? "custom" : a.preset, division.name, manifest.train.seed, out.string());
  if (release && division.name == "closed")
    log->info("official manifest: release {}{}", release->version,
              release->current ? "" : " (superseded by " + release->superseded_by + ")");
  if (release && !release->note.empty()) log->info("release note: {}", release->note);
  for (const auto& r : division.reasons) log->info("open division: {}", r);
  // Logged once run.log exists, so the file says which settings the mixer ran with.
  if (const auto what = describe_reference_settings(resolved.reference_settings); !what.empty())
    log->info("mixer options: {}", what);

  torch::Device device = pick_device(a.device);
  if (device.is_cuda() && ranks.world_size > 1) device = torch::Device(torch::kCUDA, ranks.local_rank);
  std::unique_ptr<Distributed> dist;
  if (ranks.world_size > 1) {
    dist = std::make_unique<Distributed>(ranks, device);
    log->info("data parallel: rank {} of {} ({}, {}), {} examples per rank per step", ranks.rank, ranks.world_size,
              dist->backend(), ranks.source, manifest.train.batch_size / ranks.world_size);
    // Ranks agree or nobody trains: what each was started with, compared field by field.
    nlohmann::json agreed = identity;
    agreed["config"] = to_json(manifest);
    require_identical_ranks(*dist, agreed);
  }
  TrainerOptions topts{manifest.train, manifest.model.max_len, device, static_cast<bool>(isatty(STDERR_FILENO)) && lead,
                       a.micro_batch, device.is_cuda() && !a.fp32 && manifest.train.precision != "float32",
                       lead ? out : std::filesystem::path(), identity, resume_from, resume_fallbacks, dist.get()};
  TrainResult tr = train_and_evaluate(model, data.dataset, topts, *log);
  if (!lead) return 0;  // rank 0 evaluates and writes the results

  save_module(*model, out / "model.pt");  // the final model, for `lrahost span` and reuse
  // The weights' hash ties model.pt to this result (submit, verify --reevaluate).
  const std::string model_sha256 = sha256_file(out / "model.pt");

  // 6. The result file, sealed with a digest and written atomically, last.
  const double majority = majority_class_rate(data.dataset.test, info.num_classes);
  nlohmann::json plugin_caps = capability_names(mixer.descriptor.capabilities);
  nlohmann::json r = {
      {"schema", kResultSchema},
      {"division", division.name},
      {"division_reasons", division.reasons},
      {"valid", true},
      {"invalid_reasons", nlohmann::json::array()},
      {"host",
       {{"version", build_info().version},
        {"git_revision", build_info().git_revision},
        {"git_dirty", build_info().git_dirty},
        {"sdk_abi", std::to_string(LRA_ABI_MAJOR) + "." + std::to_string(LRA_ABI_MINOR)},
        {"torch_version", host_descriptor().torch_version},
        {"cuda_version", nullptr},
        {"build_type", build_info().build_type},
        {"compiler", build_info().compiler}}},
      {"system", system_info()},
      {"plugin",
       {{"name", mixer.descriptor.name},
        {"version", mixer.descriptor.version},
        {"sdk_abi", std::to_string(mixer.descriptor.abi_major) + "." + std::to_string(mixer.descriptor.abi_minor)},
        {"file", mixer.descriptor.file.string()},
        {"sha256", mixer.sha256},
        {"options", params_json(mixer_options)},
        {"reference_settings", resolved.reference_settings},  // null: not a built-in mixer
        {"params", {{"total", total_params}, {"mixer", model->mixer_parameters()}}},
        {"capabilities", plugin_caps}}},
      {"task",
       {{"name", a.task},
        {"plugin_version", task.descriptor.version},
        {"manifest", manifest.source},
        {"manifest_sha256", choices.manifest_sha256},
        {"manifest_release", release ? nlohmann::json(release->version) : nlohmann::json(nullptr)},
        {"preset", a.manifest ? nlohmann::json(nullptr) : nlohmann::json(a.preset)},
        {"data_fingerprint", data.fingerprint},
        {"data_source", data.dataset.source},
        {"data_params", params_json(data.params)},
        {"examples", {{"train", data.dataset.train.size()}, {"val", data.dataset.val.size()}, {"test", data.dataset.test.size()}}}}},
      {"rules", {{"reference_params", budget.reference}, {"param_budget_ratio", budget.ratio}, {"param_budget", budget.budget}}},
      {"seed", manifest.train.seed},
      {"distributed", {{"world_size", ranks.world_size}, {"backend", dist ? dist->backend() : "none"}, {"launcher", ranks.source}}},
      {"overrides", choices.overrides},
      {"config", to_json(manifest)},
      {"model", {{"file", "model.pt"}, {"sha256", model_sha256}}},
      {"metrics",
       {{"test_accuracy", tr.test.accuracy},
        {"test_loss", tr.test.loss},
        {"best_val_accuracy", tr.best_val_accuracy},
        {"best_val_step", tr.best_val_step},
        {"final_train_loss", tr.final_train_loss},
        {"final_train_accuracy", tr.final_train_accuracy},
        {"majority_class_rate", majority}}},
      {"history", tr.history},
      {"timing",
       {{"wall_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count()},
        {"train_seconds", tr.train_seconds},
        {"eval_seconds", tr.eval_seconds},
        {"steps", tr.steps},
        {"steps_per_second", tr.steps_per_second},
        {"peak_memory_bytes", peak_memory_bytes(device)},
        {"peak_memory_kind", peak_memory_kind(device)},
        {"device", describe_device(device)},
        {"precision", topts.bf16 ? "bfloat16 autocast" : "float32"},
        {"threads", threads},
        {"micro_batch", topts.micro_batch > 0 ? topts.micro_batch : manifest.train.batch_size},
        {"resumed_from", tr.resumed_from ? nlohmann::json(tr.resumed_from->filename().string()) : nlohmann::json(nullptr)}}},
      {"command_line", a.command_line},
      {"started_at", started_at},
      {"finished_at", utc_now()},
  };
  nlohmann::json sealed = seal(std::move(r));
  if (sign_key) sealed["signature"] = sign_digest(*sign_key, sealed["digest"].get<std::string>());
  write_result(out, sealed);

  // 7. The summary a person reads.
  std::printf("\n%s on %s (%s division)\n", mixer.descriptor.name.c_str(), a.task.c_str(), division.name.c_str());
  std::printf("  test accuracy          %6.2f%%  (%zu examples)\n", 100 * tr.test.accuracy, data.dataset.test.size());
  std::printf("  majority-class rate    %6.2f%%\n", 100 * majority);
  std::printf("  best validation        %6.2f%%  (step %lld)\n", 100 * tr.best_val_accuracy,
              static_cast<long long>(tr.best_val_step));
  if (auto p = paper_accuracy("transformer", a.task))
    std::printf("  LRA paper, Transformer %6.2f%%  (Table 1, official protocol)\n", *p);
  if (mixer.descriptor.name != "transformer")
    if (auto p = paper_accuracy(mixer.descriptor.name, a.task))
      std::printf("  LRA paper, %-11s %6.2f%%\n", mixer.descriptor.name.c_str(), *p);
  std::printf("  training               %.1f s, %.2f steps/s\n", tr.train_seconds, tr.steps_per_second);
  std::printf("  result                 %s\n", (out / "result.json").c_str());
  if (sign_key) std::printf("  signed by              %s\n", sign_key->key_id.c_str());
  return 0;
}

int effective_threads(int requested) {
  if (requested > 0) return requested;
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace lra::host
