// manifest/embedded.h — text files compiled into the host binary.
//
// The definition of embedded_manifests() is generated at configure time by
// cmake/LraEmbed.cmake (lra_embed_files) from every manifests/**/*.toml, so
// the official manifests travel inside lrahost and a closed result can be
// verified against them byte for byte.
#pragma once

#include <string_view>
#include <vector>

namespace lra::host {

struct EmbeddedFile {
  const char* name;       // relative to manifests/, e.g. "lra-v1/listops.toml"
  std::string_view text;  // the file's exact bytes
};

// Every embedded file, sorted by name.
const std::vector<EmbeddedFile>& embedded_manifests();

// The embedded file called `name` (e.g. "released/lra-v1.0/listops.toml"), or nullptr.
const EmbeddedFile* find_embedded(std::string_view name);

}  // namespace lra::host
