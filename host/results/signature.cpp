#include "results/signature.h"

#include "lra/status.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

json sign_digest(const Ed25519PrivateKey& key, const std::string& digest) {
  return {{"algorithm", "ed25519"},
          {"key_id", key.key_id},
          {"public_key", base64_encode(key.public_raw)},
          {"value", base64_encode(ed25519_sign(key, digest))}};
}

SignatureCheck check_signature(const json& result) {
  SignatureCheck c;
  if (!result.is_object() || !result.contains("signature")) return c;
  c.present = true;
  const json& s = result["signature"];
  auto text = [&](const char* k) { return s.is_object() && s.contains(k) && s[k].is_string() ? s[k].get<std::string>() : ""; };
  if (!s.is_object() || text("algorithm") != "ed25519") {
    c.problem = "signature must be an object with algorithm \"ed25519\"";
    return c;
  }
  std::string public_raw, value;
  if (!base64_decode(text("public_key"), &public_raw) || public_raw.size() != 32) {
    c.problem = "signature.public_key is not the base64 of a 32-byte Ed25519 public key";
    return c;
  }
  if (!base64_decode(text("value"), &value) || value.size() != 64) {
    c.problem = "signature.value is not the base64 of a 64-byte Ed25519 signature";
    return c;
  }
  c.key_id = ed25519_key_id(public_raw);
  if (text("key_id") != c.key_id) {
    c.problem = "signature.key_id " + json(text("key_id")).dump() + " is not the id of its public key (" + c.key_id + ")";
    return c;
  }
  const std::string digest = result.contains("digest") && result["digest"].is_string() ? result["digest"].get<std::string>() : "";
  if (!ed25519_verify(public_raw, digest, value)) {
    c.problem = "signature by " + c.key_id + " does not verify over the digest (the file was edited and re-sealed "
                "after it was signed, or the signature was copied from another result)";
    return c;
  }
  c.valid = true;
  return c;
}

std::map<std::string, std::string> load_trusted_keys(const fs::path& dir, const std::string& option) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorKind::usage, option + " " + dir.string() + " is not a folder (give a folder of *.pub.pem files)");
  std::map<std::string, std::string> keys;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || e.path().extension() != ".pem") continue;
    try {
      const std::string raw = load_ed25519_public_key(e.path());
      keys[ed25519_key_id(raw)] = raw;
    } catch (const Error&) {
      // A private key or another kind of key in the folder is not a trusted public key.
    }
  }
  if (keys.empty())
    throw Error(ErrorKind::usage, option + " " + dir.string() + " holds no Ed25519 public key (*.pem); copy "
                                  "each trusted key's lrahost-key.pub.pem there");
  return keys;
}

void require_trusted_signer(VerifyReport& report, const std::map<std::string, std::string>& trusted,
                            const fs::path& dir) {
  if (!report.readable) return;
  std::string why;
  if (report.signed_by.empty())
    why = "unsigned, and --trusted-keys " + dir.string() + " requires a signature by one of its keys";
  else if (!trusted.count(report.signed_by))
    why = "signed by " + report.signed_by + ", which is not among the trusted keys in " + dir.string();
  if (why.empty()) return;
  report.reasons.push_back(why);
  report.valid = false;
}

}  // namespace lra::host
