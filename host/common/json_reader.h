// common/json_reader.h — checking a JSON document the host reads (bench.json,
// forgetting.json, the reference tool's result files) field by field, with
// one wording for every complaint: "<source>: <field>: <what>", the field
// being a path such as "results[3].steps_per_s".
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "lra/status.h"

namespace lra::host {

// JSON has no NaN or Infinity, but Python's json.dump writes them. Turns each
// such bare word (NaN, Infinity, -Infinity) outside strings into a string
// marked by a leading \u0001, so that a JsonReader made with
// NonFiniteWords::quoted can name the field holding one instead of the
// parser failing at a byte position.
std::string quote_non_finite(const std::string& text);

// Whether the document's text went through quote_non_finite.
enum class NonFiniteWords {
  absent,  // a string is a string, whatever it holds
  quoted,  // a marked string is Python's NaN/Infinity: neither a number nor a string
};

class JsonReader {
 public:
  // Errors are lra::Error(kind) with the message "<source>: <field>: <what>"
  // ("<source>: <what>" when the field is empty), then "; <hint>" when a hint
  // is given.
  JsonReader(std::string source, lra::ErrorKind kind, std::string hint = "",
             NonFiniteWords words = NonFiniteWords::absent);

  [[noreturn]] void fail(const std::string& field, const std::string& what) const;

  // object[key]; "missing" at `field` when absent.
  const nlohmann::json& require(const nlohmann::json& object, const char* key, const std::string& field) const;
  void expect_object(const nlohmann::json& v, const std::string& field) const;

  // A JSON number; with `finite`, also NaN and infinities (which only a
  // document built in memory can hold) are "expected a number".
  double number(const nlohmann::json& v, const std::string& field, bool finite = false) const;
  // A number >= 0, else "<value> is negative".
  double non_negative(const nlohmann::json& v, const std::string& field, bool finite = false) const;
  // An integer that fits int64_t.
  int64_t integer(const nlohmann::json& v, const std::string& field) const;
  std::string string(const nlohmann::json& v, const std::string& field) const;

  // The value as JSON text, shortened to 60 bytes so that a wrong array does
  // not flood the message; a quoted NaN/Infinity as its bare word.
  std::string shown(const nlohmann::json& v) const;
  bool is_non_finite(const nlohmann::json& v) const;

 private:
  std::string source_;
  lra::ErrorKind kind_;
  std::string hint_;
  NonFiniteWords words_;
};

}  // namespace lra::host
