#include "reevaluation/reevaluation_signature.h"

#include "lra/status.h"
#include "reevaluation/reevaluate.h"
#include "results/result.h"
#include "results/signature.h"

namespace lra::host {
using nlohmann::json;

json seal_reevaluation(json report, const Ed25519PrivateKey* key) {
  if (!report.is_object()) throw Error(ErrorKind::internal, "seal_reevaluation: the report is not a JSON object");
  report.erase("signature");
  report["digest"] = compute_digest(report);
  if (key) report["signature"] = sign_digest(*key, report["digest"].get<std::string>());
  return report;
}

ReevaluationSignatureCheck check_reevaluation_signature(const json& report,
                                                        const std::map<std::string, std::string>& trusted) {
  ReevaluationSignatureCheck c;
  auto verdict = [&](ReevaluationTrust t, std::string why) {
    c.trust = t;
    c.unverified = std::move(why);
    return c;
  };
  if (!report.is_object() || report.value("schema", json()) != kReevaluationSchema)
    return verdict(ReevaluationTrust::not_a_report, "not a re-evaluation report");
  if (!report.contains("signature")) return verdict(ReevaluationTrust::unsigned_report, "unsigned");
  // Structure, key id and the signature over "digest" (check_signature's
  // problem text quotes the file, so only its verdict is used here).
  const SignatureCheck sig = check_signature(report);
  c.key_id = sig.key_id;
  if (sig.key_id.empty()) return verdict(ReevaluationTrust::bad_signature, "bad signature");
  // The key itself, not only its 64-bit id, must be the trusted one.
  const auto it = trusted.find(sig.key_id);
  // (check_signature found signature.public_key a decodable string, or key_id would be empty.)
  std::string public_raw;
  base64_decode(report["signature"].value("public_key", std::string()), &public_raw);
  if (it == trusted.end() || public_raw != it->second)
    return verdict(ReevaluationTrust::unknown_key, "unknown key " + sig.key_id);
  if (!sig.valid) return verdict(ReevaluationTrust::bad_signature, "bad signature");
  // The signature covers the digest; the digest must still cover the content.
  if (!report["digest"].is_string() || report["digest"].get<std::string>() != compute_digest(report))
    return verdict(ReevaluationTrust::bad_signature, "bad signature");
  c.trust = ReevaluationTrust::trusted;
  return c;
}

}  // namespace lra::host
