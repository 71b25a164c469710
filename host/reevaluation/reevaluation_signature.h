// Signed re-evaluation reports. `verify --reevaluate --sign-key KEY` seals
// reevaluation.json with a digest over everything in it but "digest" and
// "signature" (results/result.h's compute_digest) and signs that digest with
// the verifying maintainer's Ed25519 key (results/signature.h's format). The
// digest covers "result_digest", which binds the report to one result, and
// "schema", so a report's signature can never stand for a result's or the
// other way round. The leaderboard believes a report only when
// check_reevaluation_signature finds it signed by a key it was given.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "common/ed25519.h"

namespace lra::host {

// `report` with "digest" set and, when `key` is given, "signature" over that
// digest. Throws lra::Error(internal) if `report` is not an object.
nlohmann::json seal_reevaluation(nlohmann::json report, const Ed25519PrivateKey* key);

enum class ReevaluationTrust { trusted, unsigned_report, unknown_key, bad_signature, not_a_report };

struct ReevaluationSignatureCheck {
  ReevaluationTrust trust = ReevaluationTrust::unsigned_report;
  std::string key_id;  // recomputed from the report's public key, never copied from the file; "" if unreadable
  // Why the report is not believed, in fixed words safe to publish (nothing
  // of the file's own text but a recomputed key id): "unsigned", "unknown key
  // ed25519:…", "bad signature", "not a re-evaluation report". "" when trusted.
  std::string unverified;
};

// Trusted means: schema lrahost.reevaluation/v1, a signature whose public
// key is byte for byte one of `trusted` (key id -> raw key, as
// load_trusted_keys returns), that signature valid over "digest", and
// "digest" equal to the report's recomputed digest (nothing edited since).
ReevaluationSignatureCheck check_reevaluation_signature(const nlohmann::json& report,
                                                        const std::map<std::string, std::string>& trusted);

}  // namespace lra::host
