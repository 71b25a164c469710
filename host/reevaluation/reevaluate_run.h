// One run of a bundle re-evaluated (reevaluation/reevaluate.h, steps 1-10):
// the verifier's checks of its result file, data and budget, the isolated
// evaluation of its model (reevaluation/isolated_evaluation.h) and the
// scoring against the labels only the verifier holds.
#pragma once

#include <filesystem>
#include <functional>

#include "reevaluation/reevaluate.h"
#include "reevaluation/source_build.h"
#include "reevaluation/submitted_plugin.h"

namespace lra::host {

struct RunContext {
  const ReevaluateOptions& o;
  const OfficialLookup& official;
  std::filesystem::path run_dir;       // the run's folder in the unpacked bundle
  const SubmittedPlugin& submitted;
  std::filesystem::path scratch;       // this run's part of the sandbox area (removed afterwards)
  std::filesystem::path log_dir;       // the maintainer's local logs
  int time_limit_seconds = 3600;       // the mixer process's whole life (what is left of the bundle's budget)
  // The plugin built from `submitted`'s bundled source, built once per bundle
  // (reevaluate.cpp) when the first run that needs it asks.
  std::function<const SourceBuild&()> build_source;
};

// Fills r.reasons, r.facts and r.report; a run that fails a check is
// reported, not thrown (only Error(storage/memory) and an unreadable bundle are).
void reevaluate_run(const RunContext& ctx, RunReevaluation& r);

}  // namespace lra::host
