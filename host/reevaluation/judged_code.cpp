#include "reevaluation/judged_code.h"

#include <regex>

#include "common/json_input.h"

namespace lra::host {
using nlohmann::json;

JudgedCode judged_code(const JudgedCodeFacts& f) {
  if (f.python) return JudgedCode::python_sources;
  if (f.has_source) return JudgedCode::built_from_source;
  if (f.builtin) return JudgedCode::host_builtin;
  return f.closed ? JudgedCode::refused : JudgedCode::submitted_binary;
}

std::optional<std::string> recorded_builtin_mixer(const json& result) {
  const json* source = json_at(result, {"plugin", "source"});
  const json* name = json_at(result, {"plugin", "name"});
  const json* file = json_at(result, {"plugin", "file"});
  if ((source && !source->is_null()) || !name || !name->is_string() || !file || !file->is_string())
    return std::nullopt;
  static const std::regex plain("[a-z0-9_]{1,64}");
  const std::string n = name->get<std::string>(), f = file->get<std::string>();
  if (!std::regex_match(n, plain) || n == "python") return std::nullopt;
  const std::string base = "lra_mixer_" + n + ".so";
  if (f.size() < base.size() + 1 || f.compare(f.size() - base.size(), base.size(), base) != 0 ||
      f[f.size() - base.size() - 1] != '/')
    return std::nullopt;
  return n;
}

std::string closed_binary_refusal(const std::string& plugin_name) {
  return "a closed entry's compiled mixer is re-evaluated from its source, and the bundle carries none for '" +
         plugin_name + "' (pack it with `lrahost submit --source DIR`, the folder with its CMakeLists.txt)";
}

}  // namespace lra::host
