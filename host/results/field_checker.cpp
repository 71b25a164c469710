#include "results/field_checker.h"

#include <cctype>
#include <limits>

#include "common/sha256.h"

namespace lra::host::verify_internal {
namespace {

using nlohmann::json;

bool has_type(const json& v, unsigned types) {
  switch (v.type()) {
    case json::value_t::string: return types & kString;
    case json::value_t::boolean: return types & kBool;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return types & (kInteger | kNumber);
    case json::value_t::number_float: return types & kNumber;
    case json::value_t::object: return types & kObject;
    case json::value_t::array: return types & kArray;
    case json::value_t::null: return types & kNull;
    default: return false;
  }
}

std::string type_words(unsigned types) {
  std::vector<std::string> words;
  if (types & kString) words.emplace_back("a string");
  if (types & kBool) words.emplace_back("a boolean");
  if (types & kInteger) words.emplace_back("an integer");
  if (types & kNumber) words.emplace_back("a number");
  if (types & kObject) words.emplace_back("an object");
  if (types & kArray) words.emplace_back("an array");
  if (types & kNull) words.emplace_back("null");
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

}  // namespace

std::string show(const json& v, std::size_t width) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}

std::string describe(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return std::string(v.type_name()) + " " + show(v);
}

std::string quoted(const std::string& s) { return show(json(s)); }

std::optional<std::int64_t> as_i64(const json* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<std::int64_t>();
  return std::nullopt;
}

const json* Checker::field(const std::string& path, unsigned types, bool required) {
  const json* cur = &root_;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object()) return nullptr;  // the parent was reported
    const auto it = cur->find(key);
    if (it == cur->end()) {
      if (required) fail("missing required field '" + path + "'");
      return nullptr;
    }
    cur = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!has_type(*cur, types)) {
    fail("field '" + path + "' must be " + type_words(types) + ", found " + describe(*cur));
    return nullptr;
  }
  return cur;
}

const json* Checker::array_of(const std::string& path, unsigned types, bool required) {
  const json* a = field(path, kArray, required);
  if (!a) return nullptr;
  for (std::size_t i = 0; i < a->size(); ++i) {
    if (!has_type((*a)[i], types)) {
      fail("field '" + path + "[" + std::to_string(i) + "]' must be " + type_words(types) +
           ", found " + describe((*a)[i]));
      return nullptr;
    }
  }
  return a;
}

void check_accuracy(Checker& c, const std::string& path, const json* v) {
  if (!v || !v->is_number()) return;
  const double x = v->get<double>();
  if (!(x >= 0.0 && x <= 1.0)) {
    c.fail("field '" + path + "' must be an accuracy in [0, 1], found " + show(*v));
  }
}

void check_sha256_field(Checker& c, const std::string& path, const json* v) {
  if (!v || !v->is_string()) return;
  if (!normalise_sha256(v->get<std::string>())) {
    c.fail("field '" + path + "' must be a SHA-256 hex digest, found " + show(*v));
  }
}

void check_non_negative(Checker& c, const std::string& path, const json* v) {
  if (!v || !v->is_number()) return;
  if (!(v->get<double>() >= 0.0)) c.fail("field '" + path + "' must not be negative, found " + show(*v));
}

}  // namespace lra::host::verify_internal
