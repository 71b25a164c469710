// A run directory written by `lrahost run`, read back: what its result.json
// records, its data, and the trained classifier rebuilt with model.pt loaded.
// Used by `lrahost span`; every failure names the file and field.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "data/task_data.h"
#include "results/run_record.h"
#include "lra/options.h"
#include "manifest/manifest.h"
#include "model/backbone.h"
#include "plugins/loader.h"

namespace lra::host {

// The run's mixer plugin: `plugin` (a name or a path the user gave on the
// command line, --plugin) when set, else the installed plugin of the recorded
// name. plugin.file from result.json is never loaded. Either must be the
// plugin the run recorded by name (Error(plugin) otherwise). `same_file`
// (optional) tells whether its SHA-256 equals the recorded one.
const LoadedPlugin& open_run_mixer(const RunRecord& run, const std::optional<std::string>& plugin = std::nullopt,
                                   bool* same_file = nullptr);

// The task's data with the run's [data] values (generated if synthetic and
// absent), refused with Error(data) when its fingerprint differs from the run's.
LoadedData load_run_data(const RunRecord& run, const LoadedPlugin& task, const std::optional<std::string>& data_dir,
                         int threads);

// Where the host's probe puts this run's summary (model/summary_probe.h),
// building the mixer as the run did; check_run_summary refuses, with
// Error(rules), a run whose recorded model.summary differs (a result without
// the field ran LRA's placement and is not probed).
SummaryPosition probe_run_summary(const RunRecord& run, const LoadedPlugin& mixer, const lra::TaskInfo& info);
void check_run_summary(const RunRecord& run, const LoadedPlugin& mixer, const lra::TaskInfo& info);

// The classifier as `run` built it before training: the recorded
// configuration, mixer options, seed and summary position, freshly
// initialised, on `device`, in evaluation mode.
Classifier fresh_classifier(const RunRecord& run, const LoadedPlugin& mixer, const lra::TaskInfo& info,
                            const torch::Device& device);

// The classifier as trained: rebuilt from the recorded configuration, mixer
// options and seed, model.pt loaded onto `device`, in evaluation mode (no
// dropout). A model.pt that does not fit is Error(data).
Classifier load_trained_classifier(const RunRecord& run, const LoadedPlugin& mixer, const lra::TaskInfo& info,
                                   const torch::Device& device);

}  // namespace lra::host
