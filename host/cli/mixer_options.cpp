#include "cli/mixer_options.h"

#include "lra/status.h"

namespace lra::host {

lra::Value parse_typed(const std::string& text, const lra::Value& like, const std::string& key) {
  auto bad = [&]() -> lra::Value {
    throw Error(ErrorKind::rules, "'" + key + "' must be " + type_name(like) + ", got '" + text + "'");
  };
  try {
    size_t used = 0;
    switch (like.index()) {
      case 0:
        if (text == "true") return true;
        if (text == "false") return false;
        return bad();
      case 1: {
        auto v = std::stoll(text, &used);
        return used == text.size() ? lra::Value(static_cast<int64_t>(v)) : bad();
      }
      case 2: {
        auto v = std::stod(text, &used);
        return used == text.size() ? lra::Value(v) : bad();
      }
      default: return text;
    }
  } catch (const std::logic_error&) {  // stoll/stod: invalid_argument, out_of_range
    return bad();
  }
}

lra::Params resolve_mixer_options(const LoadedPlugin& mixer, const std::map<std::string, std::string>& given) {
  std::vector<lra::OptionSpec> specs;
  if (auto st = mixer.mixer().options(&specs); !st.ok())
    throw Error(ErrorKind::plugin, "plugin '" + mixer.descriptor.name + "' failed to list its options: " + st.message);
  lra::Params out;
  for (const auto& s : specs) out[s.name] = s.default_value;
  for (const auto& [key, text] : given) {
    auto it = out.find(key);
    if (it == out.end()) {
      std::string valid;
      for (const auto& s : specs) valid += (valid.empty() ? "" : ", ") + s.name;
      throw Error(ErrorKind::rules, "mixer '" + mixer.descriptor.name + "' has no option '" + key +
                                        "' (its options: " + (valid.empty() ? "none" : valid) + ")");
    }
    it->second = parse_typed(text, it->second, "mixer." + key);
  }
  return out;
}

std::map<std::string, std::string> apply_sets(const std::vector<std::string>& sets, Manifest& manifest,
                                              std::vector<std::string>* applied) {
  std::map<std::string, std::string> mixer_sets;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (s.rfind("mixer.", 0) == 0 && eq != std::string::npos) {
      mixer_sets[s.substr(6, eq - 6)] = s.substr(eq + 1);
      continue;
    }
    apply_override(manifest, s);
    applied->push_back(s);
  }
  return mixer_sets;
}

}  // namespace lra::host
