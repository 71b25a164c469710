// TEMPORARY (lead's stub until the sandbox branch lands).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
namespace lra::host {
std::string read_untrusted_file(const std::filesystem::path& file, uint64_t max_bytes);
}
