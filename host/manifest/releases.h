// manifest/releases.h — the registry of released official manifests
// (manifests/releases.toml, compiled into the host with the manifests).
//
// A released manifest's bytes never change: a result keeps verifying as
// closed under the release whose manifest it names by SHA-256, however many
// releases come after it. The newest release of a protocol is its current one
// (what --preset official runs). docs/releases.md says how a release is made.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lra::host {

inline constexpr const char* kReleasesFile = "releases.toml";

struct ReleasedManifest {
  std::string version;   // e.g. "lra-v1.2"
  std::string protocol;  // e.g. "lra-v1"
  std::string task;      // e.g. "pathfinder"
  std::string file;      // embedded name, e.g. "released/lra-v1.2/pathfinder.toml"
  std::string sha256;    // lowercase hex of the file's bytes
  std::string note;      // what a reader comparing with the paper must know ("" = nothing)
  bool current = false;  // the newest release of its protocol
  // The protocol's newest release when this one is older and its bytes are not
  // carried unchanged into the newest, else "".
  std::string superseded_by;
};

// Every released manifest, in registry order (oldest release first). Parsed
// once from the embedded registry; a malformed registry, a listed file that
// is not embedded, or a file whose bytes do not match its sha256 is
// lra::Error(internal): the host was built from a broken tree.
const std::vector<ReleasedManifest>& released_manifests();

// Parses registry text (exposed for tests). `source` names it in messages;
// `verify_files` checks every file against the embedded manifests.
std::vector<ReleasedManifest> parse_releases(std::string_view text, const std::string& source, bool verify_files);

// The newest released manifest of `task` whose bytes hash to `sha256` (hex,
// any case, optional "sha256:" prefix), or std::nullopt.
std::optional<ReleasedManifest> find_release(const std::string& task, const std::string& sha256);

// The current release's manifest of `task` in `protocol` ("lra-v1", the LRA
// protocol from scratch; "lra-spt-v1", self-pretraining), or std::nullopt.
std::optional<ReleasedManifest> current_release(const std::string& task, const std::string& protocol = "");

// The trial seeds (rules.seeds, or [train.seed]) of the released manifest of
// `task` with that hash; std::nullopt when it is not a released manifest.
std::optional<std::vector<int64_t>> release_trial_seeds(const std::string& task, const std::string& sha256);

}  // namespace lra::host
