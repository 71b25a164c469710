// Which code a re-evaluation runs for one run (the rule:
// reevaluation/judged_code.h), made concrete: the Python folder, the
// verifier's own built-in, the plugin built from the bundled source
// (reevaluation/source_build.h, once per bundle), or the submitted .so; the
// choice goes into the report ("code") and its facts.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "reevaluation/reevaluate_run.h"

namespace lra::host {

// `judged` is the plugin to stage for the mixer process; `same_build` false
// when it is not the submitted bytes (the run's accuracy is then held to the
// tolerance, as on another device, and the verifier's own number published).
// Returns false when the run is refused (r.reasons says why).
bool choose_run_code(const RunContext& ctx, const nlohmann::json& result, const std::string& division,
                     RunReevaluation& r, SubmittedPlugin& judged, bool& same_build);

}  // namespace lra::host
