// leaderboard/reevaluation_report.h — what a reevaluation.json beside a
// result (verify --reevaluate) says about it, as far as this leaderboard can
// vouch for it (reevaluation/reevaluation_signature.h): only a report signed
// by a trusted verifier counts, for or against the result. Its fields are
// read by name and type; nothing from its "sandbox" member (text the judged
// code produced) is ever read into the board, and no reason of an untrusted
// report either.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lra::host {

struct Reevaluation {
  // by_author: a report that says valid, signed by this machine's author key
  // (common/key_pair.h, verify --reevaluate --sign-as-author): shown as "re-evaluated
  // by its author", never counted as a trusted verifier's.
  enum class State { absent, unverified, passed, failed, by_author } state = State::absent;
  std::string unverified;            // why it is not believed, in the verifier's fixed words
  std::string verifier;              // key id of a trusted report
  bool private_checked = false;      // passed, with a private test set and no significant gap
  // passed: the accuracy the verifier vouches for (its own where its device
  // differed from the run's; reevaluate_run.cpp), absent in older reports
  std::optional<double> published_accuracy;
  std::vector<std::string> reasons;  // a trusted failure's own reasons, sandbox output withheld, bounded
};

// The report beside `result_file` (absent: State::absent), checked against
// `result` (its digest) and the trusted verifier keys (key id -> public key).
Reevaluation read_reevaluation(const std::filesystem::path& result_file, const nlohmann::json& result,
                               const std::map<std::string, std::string>& trusted);

}  // namespace lra::host
