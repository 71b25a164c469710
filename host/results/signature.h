// Signed results: `run --sign-key KEY` adds a "signature" member to
// result.json, an Ed25519 signature over the result's digest string (which
// covers every other member), with the public key and its key id. The digest
// is computed without "digest" and "signature", so signing never changes it.
// A signature proves who wrote the file and that nothing changed since; it
// says nothing about whether the numbers were honestly obtained.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "common/ed25519.h"
#include "results/verify.h"

namespace lra::host {

// {"algorithm": "ed25519", "key_id", "public_key" (base64, 32 bytes), "value" (base64, 64 bytes)}.
nlohmann::json sign_digest(const Ed25519PrivateKey& key, const std::string& digest);

struct SignatureCheck {
  bool present = false;  // the result has a "signature" member
  bool valid = false;    // it verifies over the result's own "digest" string
  std::string key_id;    // recomputed from the public key, never taken from the file
  std::string problem;   // why not valid
};

// Checks result["signature"] against result["digest"] (whether that digest
// matches the content is verify's separate check).
SignatureCheck check_signature(const nlohmann::json& result);

// Key id -> raw public key of every PEM public key file in `dir`. Throws
// lra::Error(usage), naming `option`, when `dir` is not a folder or holds no usable key.
std::map<std::string, std::string> load_trusted_keys(const std::filesystem::path& dir,
                                                     const std::string& option = "--trusted-keys");

// With --trusted-keys: an unsigned result, or one signed by a key not in
// `trusted`, becomes invalid with the reason.
void require_trusted_signer(VerifyReport& report, const std::map<std::string, std::string>& trusted,
                            const std::filesystem::path& dir);

}  // namespace lra::host
