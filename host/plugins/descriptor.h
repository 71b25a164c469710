// A plugin's descriptor as read from its file, and the compatibility rules
// between that descriptor and this host (ARCHITECTURE §3).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "lra/abi.h"

namespace lra::host {

// The record sizes of SDK 1.0. A later minor appends fields, so its own
// sizeof grows, but a plugin built for 1.0 stays acceptable: the checks
// compare against these, never against the current sizeof.
inline constexpr uint32_t kPluginInfoSizeV1_0 = sizeof(lra_plugin_info);  // no field appended since 1.0
inline constexpr uint32_t kPluginApiSizeV1_0 = sizeof(lra_plugin_api);    // no field appended since 1.0

// Every capability bit this host's SDK defines; a descriptor declaring any
// other bit is refused (a bit the host does not know is a promise it cannot check).
inline constexpr uint32_t kKnownCapabilities =
    LRA_CAP_CAUSAL | LRA_CAP_ATTENTION_PROBS | LRA_CAP_PADDING_MASK | LRA_CAP_ROTARY;

// The fields of lra_plugin_info as safe C++ strings (the file may be hostile).
struct Descriptor {
  std::filesystem::path file;
  uint32_t struct_size = 0, magic = 0, kind = 0, capabilities = 0;
  uint64_t section_size = 0;  // bytes of the file's .lra_plugin section (0: not read from a file)
  uint16_t abi_major = 0, abi_minor = 0;
  int32_t cxx11_abi = 0;
  std::string torch_version, stdlib, compiler, name, version, description;
};

// The same facts about the host itself, from its own compile-time macros.
const Descriptor& host_descriptor();

// Reads the descriptor from the ".lra_plugin" section without loading the
// library. Throws lra::Error(plugin) for a missing file, a non-ELF file or a
// library that is not an lrahost plugin.
Descriptor read_descriptor(const std::filesystem::path& file);
Descriptor descriptor_from_record(const lra_plugin_info& record, const std::filesystem::path& file);

// Every reason the plugin cannot run in this host, most fundamental first,
// each naming both sides' values. Empty means compatible.
std::vector<std::string> compatibility_problems(const Descriptor& plugin, const Descriptor& host,
                                                uint32_t wanted_kind);

const char* kind_name(uint32_t kind);
std::vector<std::string> capability_names(uint32_t caps);

}  // namespace lra::host
