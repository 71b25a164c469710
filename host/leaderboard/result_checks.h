// How the leaderboard checks one result file (verify, its re-evaluation
// report, Path-X's count), bounds what it publishes of it and counts an
// entry's checks: shared by LRA's divisions, the recall suites' sections
// (leaderboard/suite_sections.h) and the baselines. Internal to lra_host_leaderboard.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "leaderboard/board.h"
#include "leaderboard/reevaluation_report.h"
#include "common/json_input.h"
#include "leaderboard/scores.h"
#include "results/verify.h"

namespace lra::host {

// j[outer][inner] (j[outer] when inner is null) when it is a string, else "".
std::string string_at(const nlohmann::json& j, const char* outer, const char* inner);

// Caps what aggregation made of a result's strings (how it was made, notes,
// options; site_text.h's bounds), and an invalid result's listing.
void bound_entry(ScoreEntry& e);
void bound_invalid(InvalidResult& r);

// How far one result file was checked, before its entry is known.
struct ResultChecks {
  std::string signed_by;
  bool reevaluated = false, private_checked = false, by_author = false;
  std::string verifier, unverified;
  bool data_not_checked = false;  // closed, on LRA's release files, no trusted re-evaluation
};

// One result file as the leaderboard reads it, for entries and baselines alike:
// verified, its strings bounded, its division the verified one, its
// reevaluation.json read. `invalid` says why it must not be scored: verify
// refused it, a trusted verifier's re-evaluation failed it, or its Path-X count
// cannot be (the chance test that marks Path-X FAIL cannot take it on trust).
struct CheckedResult {
  VerifyReport report;  // report.readable false: nothing else is set
  nlohmann::json result;
  Reevaluation reevaluation;
  std::optional<InvalidResult> invalid;
  ResultChecks checks() const {
    const bool reevaluated = reevaluation.state == Reevaluation::State::passed;
    const nlohmann::json* release = json_at(result, {"task", "lra_release_files"});
    const bool release_files = release && release->is_boolean() && release->get<bool>();
    return {report.signed_by,
            reevaluated,
            reevaluation.private_checked,
            reevaluation.state == Reevaluation::State::by_author,
            reevaluation.verifier,
            reevaluation.unverified,
            report.division == "closed" && release_files && !reevaluated};
  }
};

CheckedResult check_result_file(const std::filesystem::path& file, const OfficialLookup& official,
                                const std::map<std::string, std::string>& trusted_verifiers);

// An entry's checks, counted over its sources.
void count_checks(ScoreEntry& entry, std::map<std::string, ResultChecks>& checks);

}  // namespace lra::host
