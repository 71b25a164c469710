// The release registry (manifest/releases.h) in the shapes verify, the
// submission check and the leaderboard take (results/verify.h, submission.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "manifest/releases.h"
#include "results/verify.h"
#include "rules/rules.h"

namespace lra::host {

// Every released official manifest of `task`, oldest first.
std::vector<OfficialManifest> registry_official(const std::string& task);

// The trial seeds of the released manifest of `task` with that SHA-256 (""
// = the current release); std::nullopt when there is none.
std::optional<std::vector<int64_t>> registry_trial_seeds(const std::string& task, const std::string& manifest_sha256);

// The division facts of a run whose manifest text is `manifest_text`: it
// counts as official when its bytes are a released manifest of the task (any
// release, the current one or an older one, which *release then names);
// otherwise it is compared with the current release, and is open.
// `protocol` ("lra-v1", "lra-spt-v1"; "" = the task's first) names the
// current release an unreleased manifest is compared with.
RunChoices run_choices(const std::string& task, const std::string& manifest_label, const std::string& manifest_text,
                       std::optional<ReleasedManifest>* release, const std::string& protocol = "");

// Why the loaded data are not the official data of `release` (split sizes,
// and for generated tasks the carried fingerprint), or std::nullopt when they
// are. LRA's own release files (lra_release_files) are the data Table 1 was
// measured on: their split sizes decide, as for downloaded data. A run on
// other data is open, decided before training starts. `setting`: the
// manifest's [settings] entry the run stands on (kBaselineSetting for its own).
std::optional<std::string> data_differs_from_official(const ReleasedManifest& release, const std::string& setting,
                                                      int64_t train, int64_t val,
                                                      int64_t test, const std::string& fingerprint,
                                                      bool lra_release_files = false);

// Whether a task's Dataset::source says its data are LRA's own release files
// (lra::kLraReleaseSource, sdk/include/lra/task.h).
bool is_lra_release_source(const std::string& source);

}  // namespace lra::host
