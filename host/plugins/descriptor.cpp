#include "plugins/descriptor.h"

#include <cstdio>
#include <cstring>

#include "common/plugin_identity.h"
#include "common/text.h"
#include "lra/build_facts.h"
#include "lra/status.h"
#include "plugins/elf_section.h"

namespace lra::host {
namespace {

template <size_t N>
std::string field(const char (&a)[N]) {
  return std::string(a, strnlen(a, N));
}

// "libstdc++ 12" -> {"libstdc++", 12}
std::pair<std::string, int> split_stdlib(const std::string& s) {
  auto sp = s.rfind(' ');
  if (sp == std::string::npos) return {s, 0};
  try {
    return {s.substr(0, sp), std::stoi(s.substr(sp + 1))};
  } catch (...) {
    return {s, 0};
  }
}

}  // namespace

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case LRA_KIND_MIXER: return "mixer";
    case LRA_KIND_TASK: return "task";
    default: return "unknown";
  }
}

Descriptor descriptor_from_record(const lra_plugin_info& r, const std::filesystem::path& file) {
  Descriptor d;
  d.file = file;
  d.struct_size = r.struct_size;
  d.abi_major = r.abi_major;
  d.abi_minor = r.abi_minor;
  d.magic = r.magic;
  d.kind = r.kind;
  d.capabilities = r.capabilities;
  d.cxx11_abi = r.cxx11_abi;
  d.torch_version = field(r.torch_version);
  d.stdlib = field(r.stdlib);
  d.compiler = field(r.compiler);
  d.name = field(r.name);
  d.version = field(r.version);
  d.description = field(r.description);
  return d;
}

const Descriptor& host_descriptor() {
  static const Descriptor d = [] {
    lra_plugin_info r{};
    r.struct_size = sizeof r;
    r.abi_major = LRA_ABI_MAJOR;
    r.abi_minor = LRA_ABI_MINOR;
    r.magic = LRA_PLUGIN_MAGIC;
    r.cxx11_abi = LRA_CXX11_ABI;
    std::strncpy(r.torch_version, LRA_TORCH_VERSION_STRING, sizeof r.torch_version - 1);
    std::strncpy(r.stdlib, LRA_STDLIB_STRING, sizeof r.stdlib - 1);
    std::strncpy(r.compiler, LRA_COMPILER_STRING, sizeof r.compiler - 1);
    std::strncpy(r.name, "lrahost", sizeof r.name - 1);
    return descriptor_from_record(r, "");
  }();
  return d;
}

Descriptor read_descriptor(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw Error(ErrorKind::plugin, "plugin file '" + file.string() +
                                       "' does not exist; give a built-in plugin name or the path of a .so");
  auto bytes = read_elf_section(file, LRA_PLUGIN_SECTION);
  if (!bytes)
    throw Error(ErrorKind::plugin,
                "'" + file.string() + "' is a shared library but not an lrahost plugin (no " +
                    LRA_PLUGIN_SECTION + " section); build plugins with lra_add_plugin() and "
                    "LRA_MIXER_PLUGIN/LRA_TASK_PLUGIN from the SDK");
  // The first 8 bytes (size, ABI major/minor) never move; read what the file has.
  lra_plugin_info r{};
  if (bytes->size() < 12)
    throw Error(ErrorKind::plugin, "'" + file.string() + "': plugin descriptor truncated (" +
                                       std::to_string(bytes->size()) + " bytes)");
  std::memcpy(&r, bytes->data(), std::min(bytes->size(), sizeof r));
  Descriptor d = descriptor_from_record(r, file);
  d.section_size = bytes->size();
  return d;
}

std::vector<std::string> compatibility_problems(const Descriptor& p, const Descriptor& h,
                                                uint32_t wanted_kind) {
  std::vector<std::string> out;
  if (p.magic != LRA_PLUGIN_MAGIC) {
    out.push_back("descriptor magic is wrong (not an lrahost plugin record)");
    return out;
  }
  if (p.abi_major != h.abi_major) {
    out.push_back("plugin built for SDK ABI " + std::to_string(p.abi_major) + "." + std::to_string(p.abi_minor) +
                  ", host implements ABI " + std::to_string(h.abi_major) + "." + std::to_string(h.abi_minor) +
                  " (major versions must be equal): rebuild the plugin against this host's SDK");
    return out;  // nothing else in the record can be trusted
  }
  if (p.abi_minor > h.abi_minor)
    out.push_back("plugin needs SDK ABI " + std::to_string(p.abi_major) + "." + std::to_string(p.abi_minor) +
                  ", host implements only " + std::to_string(h.abi_major) + "." + std::to_string(h.abi_minor) +
                  ": upgrade lrahost");
  if (p.struct_size < kPluginInfoSizeV1_0)
    out.push_back("descriptor is " + std::to_string(p.struct_size) + " bytes, ABI " +
                  std::to_string(h.abi_major) + " needs at least " + std::to_string(kPluginInfoSizeV1_0));
  if (p.section_size > 0 && p.struct_size > p.section_size)
    out.push_back("descriptor claims struct_size " + std::to_string(p.struct_size) + " bytes, its " +
                  LRA_PLUGIN_SECTION + " section holds only " + std::to_string(p.section_size) +
                  ": a corrupt or hand-written record; build the plugin with lra_add_plugin() and LRA_MIXER_PLUGIN");
  // Identity strings go into every table, page and log line: bounded and
  // visible (common/plugin_identity.h). A field without its NUL reads as one
  // byte too long.
  for (const auto& problem : {plugin_name_problem(p.name), plugin_version_problem(p.version),
                              plugin_description_problem(p.description)})
    if (problem)
      out.push_back("descriptor's " + *problem + " (docs/abi.md); give LRA_MIXER_PLUGIN a name of at most " +
                    std::to_string(kMaxPluginNameBytes) + " characters A-Z a-z 0-9 . _ -, a version of at most " +
                    std::to_string(kMaxPluginVersionBytes) + " and a description of at most " +
                    std::to_string(kMaxPluginDescriptionBytes) + " bytes");
  if (const uint32_t unknown = p.capabilities & ~kKnownCapabilities; unknown != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", unknown);
    out.push_back(std::string("descriptor declares capability bits ") + hex + " that SDK ABI " +
                  std::to_string(h.abi_major) + "." + std::to_string(h.abi_minor) +
                  " does not define (known: " + text::join(capability_names(kKnownCapabilities), ", ") +
                  "): declare only LRA_CAP_* constants from lra/abi.h");
  }
  if (p.torch_version != h.torch_version)
    out.push_back("plugin built against LibTorch " + p.torch_version + ", host runs " + h.torch_version +
                  ": rebuild the plugin against the host's LibTorch");
  if (p.cxx11_abi != h.cxx11_abi)
    out.push_back("plugin built with _GLIBCXX_USE_CXX11_ABI=" + std::to_string(p.cxx11_abi) + ", host uses " +
                  std::to_string(h.cxx11_abi));
  auto [pl, pr] = split_stdlib(p.stdlib);
  auto [hl, hr] = split_stdlib(h.stdlib);
  if (pl != hl)
    out.push_back("plugin uses C++ library " + p.stdlib + ", host uses " + h.stdlib);
  else if (pr > hr)
    out.push_back("plugin built with " + p.stdlib + ", newer than the host's " + h.stdlib);
  if (wanted_kind != 0 && p.kind != wanted_kind)
    out.push_back(std::string("plugin '") + p.name + "' is a " + kind_name(p.kind) + " plugin, a " +
                  kind_name(wanted_kind) + " plugin is needed here");
  return out;
}

}  // namespace lra::host
