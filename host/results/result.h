// result.json (schema lrahost.result/v1): the digest that makes edits
// detectable, sealing, and writing a run's result atomically.
//
// The digest is "sha256:" + the SHA-256 of the result without its "digest"
// member, serialised compactly by nlohmann::json's dump(): objects are
// std::map-ordered, so keys come out sorted and the serialisation is
// canonical. Formatting of the file on disk therefore does not matter, and a
// file parsed back yields the same digest (numbers round-trip exactly).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace lra::host {

constexpr const char* kResultSchema = "lrahost.result/v1";
constexpr const char* kResultFileName = "result.json";

// "sha256:<64 hex>" over `result` minus any "digest" and "signature" members. Strings that are
// not valid UTF-8 are serialised with U+FFFD replacements, as write_result does.
std::string compute_digest(const nlohmann::json& result);

// Returns `result` with "digest" set. Throws lra::Error(internal) if `result`
// is not a JSON object.
nlohmann::json seal(nlohmann::json result);

// Writes dir/result.json atomically (pretty, 2-space indent, trailing
// newline), creating `dir` if needed, and returns the file's path. Throws
// lra::Error(internal) if `sealed` carries no digest or one that no longer
// matches its content (it was changed after seal()), or if writing fails.
std::filesystem::path write_result(const std::filesystem::path& dir, const nlohmann::json& sealed);


}  // namespace lra::host
