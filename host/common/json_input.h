// common/json_input.h — the one way the host parses JSON it reads from users
// (result.json, forgetting.json and the reference tool's files, bench.json,
// checkpoint state.json, sweep.json, suite.json ...). The nesting depth is
// checked before nlohmann builds anything: a file nested 100,000 deep is a
// 200 KB file that would otherwise overflow the stack in the recursive
// walks (dump, digest, destructor) that follow a successful parse. A key
// that appears twice in one object is refused: nlohmann keeps the last,
// other readers the first, so the file would say two things at once.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <istream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lra::host {

// No file the host writes or reads is nested more than a few levels deep
// (result.json: 5); 64 leaves room for any hand-made file.
inline constexpr int kMaxJsonDepth = 64;

// A JSON input that cannot be used: malformed (the message is nlohmann's),
// nested too deep, or with a duplicate key (named, with the object's path). Callers add the file name and turn it into their error kind.
class JsonInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The byte offset where `text` first opens a nesting level deeper than
// `max_depth` ('[' or '{' outside strings), or std::string_view::npos.
std::size_t json_depth_violation(std::string_view text, int max_depth = kMaxJsonDepth);

// Parses `text`; throws JsonInputError when it is nested deeper than
// `max_depth` (checked first, without recursion), is not valid JSON or has
// an object with a key twice.
nlohmann::json parse_json_input(std::string_view text, int max_depth = kMaxJsonDepth);
// Reads the whole stream, then as above.
nlohmann::json parse_json_input(std::istream& in, int max_depth = kMaxJsonDepth);

// The value at a path of object keys ({"task", "examples", "test"}), or
// nullptr where a step is missing or not an object: for reading files whose
// shape is not trusted.
inline const nlohmann::json* json_at(const nlohmann::json& root, std::initializer_list<const char*> keys) {
  const nlohmann::json* v = &root;
  for (const char* k : keys) {
    if (!v->is_object()) return nullptr;
    const auto it = v->find(k);
    if (it == v->end()) return nullptr;
    v = &*it;
  }
  return v;
}

// The string at `keys`, or "" when it is missing or not a string.
inline std::string json_text_at(const nlohmann::json& root, std::initializer_list<const char*> keys) {
  const nlohmann::json* v = json_at(root, keys);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace lra::host
