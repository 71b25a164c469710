// A submission is a directory of result.json files. Beyond each file's own
// checks (results/verify.h), the set must hang together:
//   - host identity: every result was written by the same host build
//     (host.version, host.git_revision, host.torch_version);
//   - plugin identity: results naming one plugin carry one file hash and
//     version, and one set of mixer options per entry;
//   - seeds complete: for every closed (plugin, options, task, release), the
//     trial seeds are exactly that released manifest's rules.seeds, none
//     missing or repeated.
// A submission is VALID when every file is valid and these hold; it is
// CLOSED when it is valid and every result in it is closed.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/verify.h"

namespace lra::host {

// The trial seeds of the released official manifest of `task` whose SHA-256
// is `manifest_sha256` ("" = the task's current release); std::nullopt when
// there is no such manifest.
using OfficialSeeds =
    std::function<std::optional<std::vector<int64_t>>(const std::string& task, const std::string& manifest_sha256)>;

struct SubmissionFile {
  std::filesystem::path path;
  VerifyReport report;          // the file's own verification
  nlohmann::json result;        // parsed content (null when unreadable)
};

struct SubmissionReport {
  size_t files = 0;
  std::string division;                // "closed" or "open"
  bool valid = false;
  std::vector<std::string> reasons;    // set-level problems (file problems stay in each file's report)
};

// Reads and verifies every file (never throws for a bad file).
std::vector<SubmissionFile> read_submission(const std::vector<std::filesystem::path>& files,
                                            const OfficialLookup& official);

SubmissionReport verify_submission(const std::vector<SubmissionFile>& files, const OfficialSeeds& seeds);

// The official seeds absent from `present`, in the official order.
std::vector<int64_t> missing_seeds(const std::vector<int64_t>& official, const std::vector<int64_t>& present);

// {0, 1, 2} -> "0, 1, 2".
std::string seed_list_text(const std::vector<int64_t>& seeds);

}  // namespace lra::host
