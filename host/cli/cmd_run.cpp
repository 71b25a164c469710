// `lrahost run`: its options, and the summary of the run (runs/train_run.h)
// a person reads at the end.
#include <cstdio>
#include <vector>

#include "cli/commands.h"
#include "cli/console_log.h"
#include "device/blas_kernels.h"
#include "leaderboard/paper_table.h"
#include "leaderboard/smoke_baselines.h"
#include "runs/train_run.h"

namespace lra::host {

// docs/cli.md: exit 9, stopped by --stop-after with a checkpoint; not an error.
constexpr int kExitStopped = 9;

int run_command(const RunArgs& a) {
  load_best_blas_kernels();  // may start the program again: before any other work
  auto log = make_logger();
  const std::optional<RunSummary> run = train_run(a, *log);
  if (!run) return 0;  // not rank 0
  const RunSummary& r = *run;
  if (r.stopped) {  // --stop-after: a checkpoint, no result yet
    std::printf("\n%s on %s (%s division): stopped at update %lld of %lld after %.1f s of training (%.2f steps/s)\n"
                "  checkpoint             %s\n  continue with          the same command and --resume\n",
                r.plugin.c_str(), r.task.c_str(), r.division.c_str(), static_cast<long long>(r.steps_done),
                static_cast<long long>(r.total_steps), r.train_seconds, r.steps_per_second, r.checkpoint.c_str());
    return kExitStopped;
  }
  std::printf("\n%s on %s (%s division%s)\n", r.plugin.c_str(), r.task.c_str(), r.division.c_str(),
              r.pretraining.empty() ? "" : ", self-pretrained");
  if (!r.pretraining.empty()) std::printf("  pretraining            %s\n", r.pretraining.c_str());
  if (!r.configuration.empty()) std::printf("  configuration          %s\n", r.configuration.c_str());
  if (r.test_positions > 0) {  // a sequence task: accuracy per scored position
    std::printf("  test accuracy          %6.2f%%  (%lld scored positions of %zu examples; %.2f%% of the examples "
                "wholly right)\n",
                100 * r.test_accuracy, static_cast<long long>(r.test_positions), r.test_examples,
                100 * r.test_example_accuracy);
    std::printf("  majority target        %6.2f%%\n", 100 * r.majority_class_rate);
  } else {
    std::printf("  test accuracy          %6.2f%%  (%zu examples)\n", 100 * r.test_accuracy, r.test_examples);
    std::printf("  majority-class rate    %6.2f%%\n", 100 * r.majority_class_rate);
  }
  std::printf("  best validation        %6.2f%%  (step %lld)\n", 100 * r.best_val_accuracy,
              static_cast<long long>(r.best_val_step));
  // Beside what it may be compared with: the paper's figures for the official
  // protocol; the committed smoke baselines (the same command on the
  // development machine) for an unchanged smoke run; nothing otherwise.
  if (r.official_protocol) {
    if (auto p = paper_accuracy("transformer", r.task))
      std::printf("  LRA paper, Transformer %6.2f%%  (Table 1, official protocol)\n", *p);
    if (r.plugin != "transformer")
      if (auto p = paper_accuracy(r.plugin, r.task)) std::printf("  LRA paper, %-11s %6.2f%%\n", r.plugin.c_str(), *p);
  } else if (r.unchanged_smoke) {
    std::vector<std::string> names = {"transformer"};
    if (r.plugin != "transformer") names.push_back(r.plugin);
    for (const auto& name : names)
      if (auto b = smoke_baseline(name, r.task))
        std::printf("  smoke baseline, %-11s %6.2f%%  (%s)\n", name.c_str(), 100 * b->test_accuracy, b->file.c_str());
  }
  std::printf("  training               %.1f s, %.2f steps/s\n", r.train_seconds, r.steps_per_second);
  std::printf("  result                 %s\n", r.result.c_str());
  if (r.signer) std::printf("  signed by              %s\n", r.signer->c_str());
  if (!r.not_learning.empty()) std::printf("  warning                %s\n", r.not_learning.c_str());
  return 0;
}

void add_run_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<RunArgs>();
  auto* r = app.add_subcommand("run", "Train and evaluate a mixer plugin on a task under its manifest");
  r->add_option("--plugin", a->plugin, kMixerPluginHelp)->required();
  r->add_option("--task", a->task, "Task: listops, text, retrieval, image, pathfinder, pathx")->required();
  add_preset_option(r, a->preset, "official (closed division) or smoke (open, CPU-sized)");
  add_protocol_option(r, a->protocol);
  r->add_option("--manifest", a->manifest, "Use this manifest file instead of the preset (open unless identical)");
  r->add_option("--set", a->sets,
                "KEY=VALUE override, e.g. train.steps=100 (makes the run open) or mixer.OPTION=VALUE "
                "(the plugin's own option; stays closed)");
  r->add_option("--reference", a->reference,
                "Run a built-in mixer under a reference configuration: table1 = LRA's Table 1 settings for that "
                "mixer and task (its per-model backbone and LRA's mixer behaviour, docs/mixers.md); the run is "
                "open and labelled");
  add_seed_option(r, a->seed, "Trial seed (recorded; default: the manifest's train.seed)");
  r->add_option("--data-dir", a->data_dir, "Data root (default $LRA_DATA_DIR or ~/.cache/lrahost/data)");
  r->add_option("--out", a->out, "Run directory (default runs/<task>-<plugin>-<time>)");
  add_device_option(r, a->device);
  add_threads_option(r, a->threads);
  r->add_option("--micro-batch", a->micro_batch,
                "Examples per forward pass, in training (gradients are accumulated to the manifest's batch) and "
                "in evaluation; saves memory, same update and same scores")->check(CLI::NonNegativeNumber);
  r->add_flag("--resume", a->resume, "Continue the run in --out from its newest complete checkpoint (same manifest, "
                                     "plugin, options and seed)");
  r->add_option("--stop-after", a->stop_after,
                "Stop with a checkpoint and exit 9 once SECONDS of wall time have passed (a time-limited job: "
                "data and model count too; the stop falls on the next report step); the same command with "
                "--resume continues, and a closed run stays closed")
      ->check(CLI::PositiveNumber);
  r->add_option("--sign-key", a->sign_key, "Ed25519 private key (PEM, from `lrahost keygen`): sign result.json");
  r->add_flag("--isolate", a->isolate,
              "Run the mixer plugin in a confined process of its own (bubblewrap, no network, no file of the run in "
              "view): it gets its own tensors and the mixer's inputs, and trains through forward and backward calls "
              "across (docs/architecture.md#the-process-boundary)");
  add_fp32_flag(r, a->fp32, "On CUDA, float32 instead of bfloat16 autocast (the manifest's train.precision "
                            "may also forbid autocast)");
  r->add_option("--cuda-graphs", a->cuda_graphs,
                "On CUDA, capture each training update in a CUDA graph and replay it: auto (where every update has "
                "the same shapes and the mixer declares graph_safe), on (whatever the mixer declares: trying a plugin "
                "under capture), off; the same numbers either way (docs/performance.md)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  on_parsed(r, slot, a, [&slot](RunArgs& args) {
    args.command_line = slot.command_line;
    return run_command(args);
  });
}

}  // namespace lra::host
