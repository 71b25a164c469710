// results/run_result.h — result.json of a training run, assembled in one
// place from what the run knew (docs/rules.md says what each part means;
// results/verify.h checks it). The record is sealed with its digest
// (results/result.h) and written last.
#pragma once

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rules/rules.h"

namespace lra::host {

struct RunResultFacts {
  RunDivision division;
  std::string torch_version;  // the host's LibTorch
  nlohmann::json system;      // system_info()
  struct Plugin {
    std::string name, version, file, sha256;
    int abi_major = 0, abi_minor = 0;
    nlohmann::json options, reference_settings, capabilities;  // reference_settings null: not built-in
    int64_t total_params = 0, mixer_params = 0;
    nlohmann::json source;  // a Python mixer's sources (LoadedPlugin::source); null: a compiled plugin
  } plugin;
  struct Task {
    std::string name, plugin_version, manifest, manifest_sha256;
    std::optional<std::string> release, preset;  // preset: null for --manifest
    std::string data_fingerprint, data_source;
    nlohmann::json data_params;
    size_t train = 0, val = 0, test = 0;  // examples per split
    bool lra_release_files = false;       // the data are LRA's own release files (counts decide closed)
    std::map<std::string, std::string> split_fingerprints;  // train/val/test (data/task_data.h)
  } task;
  ParamBudget budget;
  int64_t seed = 0;
  struct Ranks {
    int world_size = 1;
    std::string backend = "none", launcher;
  } ranks;
  std::vector<std::string> overrides;
  // runs/reference_configuration.h's record; null: no --reference (the field is left out).
  nlohmann::json reference_configuration;
  nlohmann::json config;  // the resolved manifest (to_json)
  // The pretraining phase's record (pretrain/pretraining_phase.h); null: trained from scratch (left out).
  nlohmann::json pretraining;
  nlohmann::json optimizer;  // {"groups": [...]} (train/optimizer_groups.h); null: not recorded
  std::string model_sha256;
  std::string model_summary = "first";  // where the head reads (model/summary_position.h)
  struct Metrics {
    double test_accuracy = 0, test_loss = 0, best_val_accuracy = 0, final_train_loss = 0, final_train_accuracy = 0,
           majority_class_rate = 0;
    int64_t best_val_step = -1;
    // A sequence task's: what the accuracies count ("position"), and the test
    // split's per-example accuracy and cells; null for a classification task
    // (whose result has none of these members).
    nlohmann::json sequence;
  } metrics;
  nlohmann::json history;
  // A sequence task's measured decoding state (runs/sequence_model.h
  // run_state_size); null for a classification task (no member then).
  nlohmann::json state_size;
  struct Timing {
    double wall_seconds = 0, train_seconds = 0, eval_seconds = 0, steps_per_second = 0;
    int64_t steps = 0, peak_memory_bytes = 0, micro_batch = 0;
    std::string peak_memory_kind, device, precision;
    int threads = 0;
    std::optional<std::string> resumed_from;  // the checkpoint folder's name
    std::string cpu_kernels;                  // on the CPU: blas_kernels_name(), written when known
    std::string cuda_graphs;                  // on CUDA: how the updates ran (train/step_graph.h GraphPlan::words)
  } timing;
  std::vector<std::string> command_line;
  std::string started_at, finished_at;
};

// The unsealed result.json object (schema lrahost.result/v1) with the
// host's build facts.
nlohmann::json run_result_json(const RunResultFacts& r);

}  // namespace lra::host
