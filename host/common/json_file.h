// common/json_file.h — a JSON file read whole and parsed with the host's one
// input parser (common/json_input.h), for the commands that take result files.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "lra/status.h"

namespace lra::host {

// Throws lra::Error(kind): "<file>: cannot read this <what>" or
// "<file>: not valid JSON (...); is it a <what>?".
nlohmann::json read_json_file(const std::filesystem::path& file, ErrorKind kind, const std::string& what);

}  // namespace lra::host
