#include "runs/run_directory.h"

#include "common/utc_time.h"
#include "lra/status.h"
#include "pretrain/pretraining_phase.h"
#include "plugins/mixer_options.h"
#include "train/checkpoint.h"

namespace lra::host {
namespace {

// The newest checkpoint whose state.json fits this run's manifest and was
// written by this run; older ones of this run are the fallbacks when its
// tensors turn out unreadable. A folder of another run is skipped, saying so:
// only when no checkpoint is this run's is the resume refused (exit 4).
void choose_resume_point(RunDirectory& dir, const CheckpointList& checkpoints, int64_t total_steps) {
  std::string skipped, mismatch;
  for (auto it = checkpoints.complete.rbegin(); it != checkpoints.complete.rend(); ++it) {
    try {
      check_checkpoint_state(it->second, total_steps);
    } catch (const Error& e) {
      dir.warnings.push_back("skipping checkpoint " + it->second.string() + ": " + e.what());
      skipped += std::string(skipped.empty() ? "" : "; ") + e.what();
      continue;
    }
    const auto stored = read_checkpoint_state(it->second).identity;
    std::string differs;
    for (const auto& [key, value] : dir.identity.items())
      if (differs.empty() && (!stored.contains(key) || stored[key] != value))
        differs = it->second.string() + " was written with " + key + " = " +
                  (stored.contains(key) ? stored[key].dump() : "(none)") + ", this run has " + value.dump();
    if (!differs.empty()) {
      dir.warnings.push_back("skipping checkpoint " + it->second.string() + ": it is another run's (" + differs + ")");
      if (mismatch.empty()) mismatch = differs;
      continue;
    }
    if (dir.resume_from)
      dir.resume_fallbacks.push_back(it->second);
    else
      dir.resume_from = it->second;
  }
  if (dir.resume_from) return;
  if (!mismatch.empty())
    throw Error(ErrorKind::rules, "--resume: " + mismatch + "; resume with the same manifest, plugin, options and seed");
  throw Error(ErrorKind::data, "--resume: no intact checkpoint in " + (dir.out / "checkpoints").string() + " (" +
                                   skipped + "); remove the checkpoints folder to start the run afresh");
}

}  // namespace

void open_run_directory(RunDirectory& dir, const RunArgs& a, const RunPlan& p, const LoadedData& data) {
  dir.out = a.out ? std::filesystem::path(*a.out)
                  : std::filesystem::path("runs") /
                        (a.task + "-" + p.mixer->descriptor.name + "-" + utc_now("%Y%m%d-%H%M%S"));
  if (p.ranks.rank == 0) dir.lock.emplace(dir.out);
  if (std::filesystem::exists(dir.out / "result.json"))
    throw Error(ErrorKind::usage, "run directory " + dir.out.string() + " already holds a result.json; choose another --out");
  dir.identity = {{"task", a.task},
                  {"manifest_sha256", p.choices.manifest_sha256},
                  {"overrides", p.choices.overrides},
                  {"plugin", p.mixer->descriptor.name},
                  {"plugin_sha256", p.mixer->sha256},
                  {"mixer_options", params_json(p.resolved.options)},
                  {"seed", p.manifest.train.seed},
                  {"data_fingerprint", data.fingerprint}};
  if (dir.lock && !dir.lock->stale_note().empty()) dir.warnings.push_back(dir.lock->stale_note());
  const CheckpointList checkpoints = list_checkpoints(dir.out);
  for (const auto& [folder, why] : checkpoints.ignored)
    dir.warnings.push_back("ignoring " + folder.string() + ": " + why + " (not a checkpoint this host wrote)");
  // A self-pretrained run's first phase keeps its own files (pretrain/pretraining_phase.h).
  const bool pretraining = p.manifest.pretrain.present && has_pretraining_files(dir.out);
  if (a.resume) {
    if (!a.out) throw Error(ErrorKind::usage, "--resume needs --out DIR, the run directory to continue");
    if (checkpoints.complete.empty() && !pretraining)
      throw Error(ErrorKind::usage, "--resume: " + dir.out.string() + " holds no complete checkpoint (checkpoints/step-N/" +
                                        (p.manifest.pretrain.present ? ", or pretraining/)" : ")"));
    if (!checkpoints.complete.empty()) choose_resume_point(dir, checkpoints, p.manifest.train.steps);
  } else if (pretraining) {
    throw Error(ErrorKind::usage, "run directory " + dir.out.string() + " holds the pretraining phase of an unfinished "
                                  "run; pass --resume to continue it or choose another --out");
  } else if (!checkpoints.complete.empty()) {
    throw Error(ErrorKind::usage, "run directory " + dir.out.string() + " holds checkpoints of an unfinished run; pass "
                                  "--resume to continue it or choose another --out");
  }
}

}  // namespace lra::host
