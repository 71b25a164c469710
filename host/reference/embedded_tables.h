// reference/embedded_tables.h — the reference-settings tables compiled into
// the host (manifests/reference-mixers/*.toml, by cmake/LraEmbed.cmake).
//
// They are also among embedded_manifests() (every manifests/**/*.toml is);
// this copy lets the reference library, and the leaderboard with it, stay
// free of the manifest library and its LibTorch link.
#pragma once

#include <vector>

#include "manifest/embedded.h"

namespace lra::host {

// Every table, sorted by name ("reference-mixers/lra-v1.toml", ...).
const std::vector<EmbeddedFile>& embedded_reference_tables();

}  // namespace lra::host
