// A plugin's descriptor as read from its file, and the compatibility rules
// between that descriptor and this host (docs/abi.md, "The descriptor, read
// before loading" and "Compatibility promise").
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "lra/abi.h"
#include "lra/capabilities.h"

namespace lra::host {

// The record sizes of SDK 1.0 on LP64 (x86-64 / AArch64 Linux), frozen as
// literals. A later minor appends fields, so its own sizeof grows, but a
// plugin built for 1.0 stays acceptable: the checks compare against these,
// never against the current sizeof (docs/abi.md, "Evolving the ABI").
inline constexpr uint32_t kPluginInfoSizeV1_0 = 504;  // 24 bytes of 4-byte fields + 480 bytes of strings
inline constexpr uint32_t kPluginApiSizeV1_0 = 24;    // 8-byte header + 2 pointers

// The current records must still begin with the 1.0 layout: fields are only
// ever appended. A failure here means a 1.0 field moved or changed size, which
// is a major version bump, not a minor one.
static_assert(sizeof(void*) == 8, "kPluginApiSizeV1_0 is the LP64 size (lra_plugin_api holds two pointers)");
static_assert(sizeof(lra_plugin_info) >= kPluginInfoSizeV1_0, "lra_plugin_info shrank below its 1.0 size");
static_assert(offsetof(lra_plugin_info, struct_size) == 0 && offsetof(lra_plugin_info, abi_major) == 4 &&
                  offsetof(lra_plugin_info, abi_minor) == 6 && offsetof(lra_plugin_info, magic) == 8 &&
                  offsetof(lra_plugin_info, kind) == 12 && offsetof(lra_plugin_info, capabilities) == 16 &&
                  offsetof(lra_plugin_info, cxx11_abi) == 20 && offsetof(lra_plugin_info, torch_version) == 24 &&
                  offsetof(lra_plugin_info, stdlib) == 56 && offsetof(lra_plugin_info, compiler) == 88 &&
                  offsetof(lra_plugin_info, name) == 152 && offsetof(lra_plugin_info, version) == 216 &&
                  offsetof(lra_plugin_info, description) == 248,
              "a field of the ABI 1.0 lra_plugin_info moved");
static_assert(sizeof(lra_plugin_info::torch_version) == 32 && sizeof(lra_plugin_info::stdlib) == 32 &&
                  sizeof(lra_plugin_info::compiler) == 64 && sizeof(lra_plugin_info::name) == 64 &&
                  sizeof(lra_plugin_info::version) == 32 && sizeof(lra_plugin_info::description) == 256,
              "a string field of the ABI 1.0 lra_plugin_info changed size");
static_assert(offsetof(lra_plugin_info, description) + 256 == kPluginInfoSizeV1_0,
              "the 1.0 fields of lra_plugin_info no longer end at its 1.0 size");
static_assert(sizeof(lra_plugin_api) >= kPluginApiSizeV1_0, "lra_plugin_api shrank below its 1.0 size");
static_assert(offsetof(lra_plugin_api, struct_size) == 0 && offsetof(lra_plugin_api, abi_major) == 4 &&
                  offsetof(lra_plugin_api, abi_minor) == 6 && offsetof(lra_plugin_api, info) == 8 &&
                  offsetof(lra_plugin_api, interface) == 16,
              "a field of the ABI 1.0 lra_plugin_api moved");
static_assert(offsetof(lra_plugin_api, interface) + sizeof(void*) == kPluginApiSizeV1_0,
              "the 1.0 fields of lra_plugin_api no longer end at its 1.0 size");

// Every capability bit this host's SDK defines; a descriptor declaring any
// other bit is refused (a bit the host does not know is a promise it cannot check).
inline constexpr uint32_t kKnownCapabilities = lra::known_capability_bits();

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
using lra::capability_names;  // lra/capabilities.h

}  // namespace lra::host
