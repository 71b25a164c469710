#include "common/json_input.h"

#include <iterator>
#include <sstream>

namespace lra::host {

std::size_t json_depth_violation(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // unbalanced closers are the parser's to report
        break;
      default:
        break;
    }
  }
  return std::string_view::npos;
}

nlohmann::json parse_json_input(std::string_view text, int max_depth) {
  if (const auto at = json_depth_violation(text, max_depth); at != std::string_view::npos) {
    throw JsonInputError("nested more than " + std::to_string(max_depth) + " levels deep (at byte " +
                         std::to_string(at) + "); lrahost reads JSON up to " + std::to_string(max_depth) +
                         " levels of arrays and objects");
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw JsonInputError(e.what());
  }
}

nlohmann::json parse_json_input(std::istream& in, int max_depth) {
  std::ostringstream text;
  text << in.rdbuf();
  return parse_json_input(std::string_view(text.str()), max_depth);
}

}  // namespace lra::host
