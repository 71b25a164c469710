// The machine a run happened on, as recorded in result.json "system":
//
//   {"cpu": {"model": str|null, "logical_cores": int|null},
//    "memory_total_bytes": int|null,
//    "os": {"name": str|null, "kernel": str|null, "arch": str|null}}
//
// GPU facts come from LibTorch and are added by the caller (e.g. "gpus").
// The hostname is deliberately NOT recorded: result files are meant to be
// shared and published, and a machine name says nothing about performance.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lra::host {

// Never throws for a missing or odd /proc or /etc file; unknown facts are null.
nlohmann::json system_info();

namespace detail {
// Parsers of the files system_info() reads, exposed for the tests.
std::optional<std::string> cpuinfo_model(std::string_view proc_cpuinfo);
std::optional<std::uint64_t> meminfo_total_bytes(std::string_view proc_meminfo);
std::optional<std::string> os_release_pretty_name(std::string_view os_release);
}  // namespace detail

}  // namespace lra::host
