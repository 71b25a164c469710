// common/key_pair.h — an Ed25519 key pair on disk (lrahost-key.pem, private,
// mode 0600; lrahost-key.pub.pem, public), made by `lrahost keygen` and, on
// first use, as the author key of `verify --reevaluate --sign-as-author`.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "common/ed25519.h"

namespace lra::host {

inline constexpr const char* kPrivateKeyFile = "lrahost-key.pem";
inline constexpr const char* kPublicKeyFile = "lrahost-key.pub.pem";

// Writes a fresh pair into `dir` (created), never replacing a key: an
// existing file is lra::Error(usage) naming it; no half pair is left behind.
void create_key_pair(const std::filesystem::path& dir);

// The author key: one per user, in $LRA_AUTHOR_KEY_DIR, else
// ${XDG_CONFIG_HOME:-$HOME/.config}/lrahost/author-key. It signs a user's own
// re-evaluations (verify --reevaluate --sign-as-author), which the user's
// own leaderboard pages mark "re-evaluated by its author": a maintainer-free
// check, distinct from a trusted verifier's.
std::filesystem::path author_key_dir();

// The author key's private half, made on first use (*created says so).
Ed25519PrivateKey author_key(bool* created);

// The author key's public half (raw bytes) and id, when one exists on this machine.
struct AuthorPublicKey {
  std::string key_id, public_raw;
};
std::optional<AuthorPublicKey> author_public_key();

}  // namespace lra::host
