// Reads one named section of an ELF file from disk, without loading it, so a
// plugin's descriptor can be checked before any of its code runs (the idea
// Qt uses for its plugin metadata).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lra::host {

// Returns the section's bytes, std::nullopt if the file is ELF but has no
// such section. Throws lra::Error(plugin) if the file is not a readable
// 64-bit ELF file.
std::optional<std::vector<char>> read_elf_section(const std::filesystem::path& file,
                                                  const std::string& section);

}  // namespace lra::host
