// What the mixer process says of the plugin it opened (the answer to hello,
// isolation/mixer_wire.h): enough for the host to treat it as a loaded
// plugin without loading it (run --isolate: isolation/isolated_plugin.h) and
// for the verifier to check the name it expects. Read back bounded; the
// host hashes a compiled plugin's file itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lra/options.h"

namespace lra::host {

namespace wire {
class Writer;
class Reader;
}  // namespace wire

struct PluginDescription {
  std::string name, version, description;
  uint32_t capabilities = 0;
  uint32_t abi_major = 0, abi_minor = 0;
  std::vector<lra::OptionSpec> options;
  std::string sha256;       // the server's view: a Python mixer's source digest (the host hashes a .so itself)
  std::string source_json;  // a Python mixer's plugin.source as JSON text; "" for a compiled plugin
};

void write_description(wire::Writer& w, const PluginDescription& d);
PluginDescription read_description(wire::Reader& r);

}  // namespace lra::host
