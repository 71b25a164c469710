// runs/train_run.h — one training run, `lrahost run`'s work: resolve plugin,
// task and manifest; apply the rule tiers; check the parameter budget and the
// plugin's conformance; train (data parallel when launched as several ranks);
// write the run directory so that a failed run never leaves a result.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/logger.h>

namespace lra::host {

struct RunArgs {
  std::string plugin, task, preset = "official";
  // "scratch" (LRA as published) or "spt" (self-pretraining first: the
  // preset's lra-spt-v1 / smoke-spt manifest, docs/rules.md "Self-pretraining").
  std::string protocol = "scratch";
  std::optional<std::string> manifest, data_dir, out;
  std::vector<std::string> sets;
  std::optional<std::string> reference;  // --reference NAME: a reference configuration (plugins/reference_configuration.h)
  std::optional<int64_t> seed;
  std::string device = "auto";
  int threads = 0;  // 0 = all cores
  int64_t micro_batch = 0;  // 0 = whole batch
  bool fp32 = false;        // no bfloat16 autocast on CUDA
  std::string cuda_graphs = "auto";  // auto | on | off: training updates captured in CUDA graphs (train/step_graph.h)
  bool resume = false;      // continue from the newest complete checkpoint in --out
  bool isolate = false;     // the mixer plugin in a confined process of its own (isolation/isolated_plugin.h)
  double stop_after = 0;    // > 0: stop with a checkpoint after this many seconds of training (exit 9)
  std::optional<std::string> sign_key;  // Ed25519 private key (PEM): signs result.json
  std::vector<std::string> command_line;
};

// What the person who started the run reads at its end (rank 0 only).
struct RunSummary {
  std::string plugin, task, division;
  std::string configuration;  // the reference configuration in words, "" when none
  double test_accuracy = 0, majority_class_rate = 0, best_val_accuracy = 0;
  size_t test_examples = 0;
  // A sequence task's: the scored test positions the accuracy counts, and the
  // share of test examples with every one right (0 for a classification task).
  int64_t test_positions = 0;
  double test_example_accuracy = 0;
  int64_t best_val_step = -1;
  double train_seconds = 0, steps_per_second = 0;
  std::filesystem::path result;
  std::optional<std::string> signer;  // the signing key's id
  std::string not_learning;           // runs/not_learning_warning.h's message, "" when it did not fire
  std::string pretraining;            // a self-pretrained run's first phase in words, "" when none
  // What the accuracy may be set beside: the paper's Table 1 for a released
  // official manifest run as released (a reference configuration's settings
  // allowed); the committed smoke baselines for an unchanged smoke preset.
  bool official_protocol = false, unchanged_smoke = false;
  // --stop-after ended the run early: updates done of the manifest's total,
  // the checkpoint to --resume from; no result was written.
  bool stopped = false;
  int64_t steps_done = 0, total_steps = 0;
  std::filesystem::path checkpoint;
};

// Runs it; std::nullopt on ranks other than 0 (rank 0 writes the results),
// except that every rank reports a --stop-after stop.
// Errors are lra::Error with the documented kinds (docs/cli.md).
std::optional<RunSummary> train_run(const RunArgs& args, spdlog::logger& log);

}  // namespace lra::host
