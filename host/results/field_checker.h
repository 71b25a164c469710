// Internal to lra_host_results (verify's check stages): reading a result
// file whose shape is not trusted. A Checker looks fields up by dotted path,
// checks their JSON types and collects one plain-words reason per problem;
// the helpers render values for those reasons and check common value ranges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/sha256.h"

namespace lra::host::verify_internal {

// Allowed JSON types of a field, as a bit set.
enum Type : unsigned {
  kString = 1u << 0,
  kBool = 1u << 1,
  kInteger = 1u << 2,
  kNumber = 1u << 3,  // any number, integer or not
  kObject = 1u << 4,
  kArray = 1u << 5,
  kNull = 1u << 6,
};

// A short rendering of a value for messages: its compact JSON, cut to
// `width` characters ("..." included).
std::string show(const nlohmann::json& v, std::size_t width = 80);
// "an object", "an array", or the type name and the value.
std::string describe(const nlohmann::json& v);
// `s` as a JSON string literal.
std::string quoted(const std::string& s);

// An integer field that fits in int64, else nullopt.
std::optional<std::int64_t> as_i64(const nlohmann::json* v);

// "sha256:" prefix dropped, lowercased; nullopt unless 64 hex digits remain
// (common/sha256.h: one definition for verify, submit and the bundle reader).
using lra::host::normalise_sha256;

class Checker {
 public:
  explicit Checker(const nlohmann::json& root) : root_(root) {}

  // The field at a dotted path if present and of an allowed type; otherwise
  // nullptr and, for a required field, a reason. A field below a missing or
  // mistyped parent is not reported again.
  const nlohmann::json* field(const std::string& path, unsigned types, bool required);
  const nlohmann::json* require(const std::string& path, unsigned types) { return field(path, types, true); }
  const nlohmann::json* optional(const std::string& path, unsigned types) { return field(path, types, false); }

  // An array whose elements all have one of `types`.
  const nlohmann::json* array_of(const std::string& path, unsigned types, bool required);

  void fail(std::string reason) { reasons.push_back(std::move(reason)); }

  // The whole document, for checks that relate fields already looked up.
  const nlohmann::json& root() const { return root_; }

  std::vector<std::string> reasons;

 private:
  const nlohmann::json& root_;
};

// Range checks of a field already looked up (nullptr or another type: nothing to check).
void check_accuracy(Checker& c, const std::string& path, const nlohmann::json* v);
void check_sha256_field(Checker& c, const std::string& path, const nlohmann::json* v);
void check_non_negative(Checker& c, const std::string& path, const nlohmann::json* v);

}  // namespace lra::host::verify_internal
