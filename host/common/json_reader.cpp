#include "common/json_reader.h"

#include <cmath>
#include <limits>
#include <utility>

namespace lra::host {

using nlohmann::json;

namespace {

// The byte that marks a quoted NaN or Infinity: a control character, so no
// real JSON string starts with it unescaped.
constexpr char kNonFinite = '\x01';

}  // namespace

std::string quote_non_finite(const std::string& text) {
  static const std::string words[] = {"-Infinity", "Infinity", "NaN"};
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool quoted = false;
    for (const std::string& w : words) {
      if (text.compare(i, w.size(), w) == 0) {
        out += "\"\\u0001" + w + "\"";
        i += w.size() - 1;
        quoted = true;
        break;
      }
    }
    if (!quoted) out += c;
  }
  return out;
}

JsonReader::JsonReader(std::string source, lra::ErrorKind kind, std::string hint, NonFiniteWords words)
    : source_(std::move(source)), kind_(kind), hint_(std::move(hint)), words_(words) {}

void JsonReader::fail(const std::string& field, const std::string& what) const {
  throw lra::Error(kind_, source_ + ": " + (field.empty() ? "" : field + ": ") + what +
                              (hint_.empty() ? "" : "; " + hint_));
}

const json& JsonReader::require(const json& object, const char* key, const std::string& field) const {
  const auto it = object.find(key);
  if (it == object.end()) fail(field, "missing");
  return *it;
}

void JsonReader::expect_object(const json& v, const std::string& field) const {
  if (!v.is_object()) fail(field, "expected an object, got " + shown(v));
}

double JsonReader::number(const json& v, const std::string& field, bool finite) const {
  if (is_non_finite(v)) fail(field, "expected a number, got " + shown(v) + " (Python's json writes it; JSON has none)");
  if (!v.is_number() || (finite && !std::isfinite(v.get<double>()))) {
    fail(field, "expected a number, got " + shown(v));
  }
  return v.get<double>();
}

double JsonReader::non_negative(const json& v, const std::string& field, bool finite) const {
  const double x = number(v, field, finite);
  if (!(x >= 0)) fail(field, shown(v) + " is negative");
  return x;
}

int64_t JsonReader::integer(const json& v, const std::string& field) const {
  const bool fits = v.is_number_integer() &&
                    (!v.is_number_unsigned() ||
                     v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  if (!fits) fail(field, "expected an integer, got " + shown(v));
  return v.get<int64_t>();
}

std::string JsonReader::string(const json& v, const std::string& field) const {
  if (!v.is_string() || is_non_finite(v)) fail(field, "expected a string, got " + shown(v));
  return v.get<std::string>();
}

std::string JsonReader::shown(const json& v) const {
  if (is_non_finite(v)) return v.get<std::string>().substr(1);
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr std::size_t kMax = 60;
  if (s.size() > kMax) s = s.substr(0, kMax - 3) + "...";
  return s;
}

bool JsonReader::is_non_finite(const json& v) const {
  return words_ == NonFiniteWords::quoted && v.is_string() && !v.get_ref<const std::string&>().empty() &&
         v.get_ref<const std::string&>()[0] == kNonFinite;
}

}  // namespace lra::host
