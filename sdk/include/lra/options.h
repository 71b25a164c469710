// lra/options.h — typed values, plugin options with defaults, and the
// parameter maps that carry manifest sections to plugins.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "lra/status.h"

namespace lra {
inline namespace v1 {

// A scalar from a manifest or the command line. int64 and double are kept
// apart so "layers = 4.5" is rejected instead of truncated.
using Value = std::variant<bool, int64_t, double, std::string>;

inline const char* type_name(const Value& v) {
  switch (v.index()) {
    case 0: return "bool";
    case 1: return "int";
    case 2: return "float";
    default: return "string";
  }
}

inline std::string to_string(const Value& v) {
  switch (v.index()) {
    case 0: return std::get<bool>(v) ? "true" : "false";
    case 1: return std::to_string(std::get<int64_t>(v));
    case 2: {
      std::string s = std::to_string(std::get<double>(v));
      // trim trailing zeros for readability ("0.100000" -> "0.1")
      while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
      return s;
    }
    default: return std::get<std::string>(v);
  }
}

// One option a plugin declares: its type is the type of its default.
struct OptionSpec {
  std::string name;
  Value default_value;
  std::string help;
};

using Params = std::map<std::string, Value>;

// Typed read access with clear errors; `what` names the owner in messages.
class ParamReader {
 public:
  ParamReader(const Params& p, std::string what) : p_(p), what_(std::move(what)) {}

  int64_t get_int(const std::string& key) const { return get<int64_t>(key, "int"); }
  bool get_bool(const std::string& key) const { return get<bool>(key, "bool"); }
  std::string get_string(const std::string& key) const { return get<std::string>(key, "string"); }
  double get_float(const std::string& key) const {
    auto it = find(key);
    if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
    return get<double>(key, "float");
  }
  bool has(const std::string& key) const { return p_.count(key) != 0; }

 private:
  Params::const_iterator find(const std::string& key) const {
    auto it = p_.find(key);
    if (it == p_.end()) throw Error(ErrorKind::rules, what_ + ": missing value '" + key + "'");
    return it;
  }
  template <class T>
  T get(const std::string& key, const char* tname) const {
    auto it = find(key);
    if (auto* v = std::get_if<T>(&it->second)) return *v;
    throw Error(ErrorKind::rules, what_ + ": '" + key + "' must be " + tname + ", got " +
                                      type_name(it->second) + " " + to_string(it->second));
  }
  const Params& p_;
  std::string what_;
};

}  // namespace v1
}  // namespace lra
