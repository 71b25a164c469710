// Where datasets live and how a task plugin's data is loaded, checked and
// fingerprinted on the host side (shared by `run` and `data check`).
#pragma once

#include <filesystem>
#include <optional>
#include <map>
#include <string>

#include "lra/task.h"
#include "plugins/loader.h"

namespace lra::host {

// --data-dir, else $LRA_DATA_DIR, else $XDG_CACHE_HOME/lrahost/data, else ~/.cache/lrahost/data.
std::filesystem::path data_root(const std::optional<std::string>& flag);

// The task's declared [data] options with defaults, overlaid with `given`.
// A key the task does not declare is a rules error naming it.
lra::Params resolve_data_params(const LoadedPlugin& task, const lra::Params& given, const std::string& where);

// A dataset is a classification task (TaskInfo::num_classes >= 2, labels) or
// a sequence task (Dataset::sequence, SDK 1.4), never both, and a sequence
// task's readout (SDK 1.5) is one this host knows; throws lra::Error(data)
// naming the task and the field.
void check_task_kind(const lra::Dataset& data, const std::string& task);

struct LoadedData {
  lra::Dataset dataset;
  lra::Params params;       // effective [data] values
  std::string fingerprint;  // dataset_fingerprint()
  // split_fingerprint() of each split: what a result records as
  // task.split_fingerprints, so a re-evaluation names the split that differs.
  std::map<std::string, std::string> split_fingerprints;
};

LoadedData load_task_data(const LoadedPlugin& task, const lra::Params& given, const std::filesystem::path& root,
                          int threads, bool allow_generate, const std::string& where);

}  // namespace lra::host
