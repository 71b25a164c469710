// runs/run_directory.h — a training run's directory (runs/train_run.h):
// created only once every check passed, with its lock; the identity its
// checkpoints must share with the run; and with --resume the checkpoint to
// continue from (a self-pretrained run's first phase keeps its own files,
// pretrain/pretraining_phase.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/dir_lock.h"
#include "data/task_data.h"
#include "runs/run_plan.h"
#include "runs/train_run.h"

namespace lra::host {

struct RunDirectory {
  std::filesystem::path out;
  std::optional<DirLock> lock;  // rank 0 only: one writer per run directory (common/dir_lock.h)
  nlohmann::json identity;
  std::optional<std::filesystem::path> resume_from;
  std::vector<std::filesystem::path> resume_fallbacks;  // older checkpoints, newest first
  std::vector<std::string> warnings;                    // logged once run.log exists
};

// Fills `dir` in place (its lock cannot move): the folder (--out, or
// runs/<task>-<plugin>-<time>), its lock, the identity, and with --resume the
// checkpoint to continue from. A folder that holds a result.json, or an
// unfinished run without --resume, is refused (exit 2); a resume with no
// checkpoint of this run is exit 4 or 5 (docs/cli.md "The run directory").
void open_run_directory(RunDirectory& dir, const RunArgs& a, const RunPlan& p, const LoadedData& data);

}  // namespace lra::host
