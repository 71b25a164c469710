#include "common/json_input.h"

#include <iterator>
#include <set>
#include <sstream>
#include <vector>

#include "common/text.h"

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

namespace {

// One open array or object while parsing: the keys an object has seen and
// the key or index of the value being read, for the path in a message.
struct Frame {
  bool object = false;
  std::set<std::string> keys;
  std::string key;
  std::size_t index = 0;
};

// A key or path from the file as a message shows it: invisible characters
// written out, cut after 80 bytes (a key may be megabytes long).
std::string shown(const std::string& s) {
  constexpr std::size_t kWidth = 80;
  return text::visible_text(s.size() > kWidth ? s.substr(0, kWidth) + "..." : s);
}

// "/a/0/b" (JSON Pointer, RFC 6901) of the object on top of `frames`.
std::string object_path(const std::vector<Frame>& frames) {
  std::string path;
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
    path += '/';
    if (!frames[i].object) {
      path += std::to_string(frames[i].index);
      continue;
    }
    for (const char c : frames[i].key) path += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  }
  return path.empty() ? "/" : shown(path);
}

}  // namespace

nlohmann::json parse_json_input(std::string_view text, int max_depth) {
  if (const auto at = json_depth_violation(text, max_depth); at != std::string_view::npos) {
    throw JsonInputError("nested more than " + std::to_string(max_depth) + " levels deep (at byte " +
                         std::to_string(at) + "); lrahost reads JSON up to " + std::to_string(max_depth) +
                         " levels of arrays and objects");
  }
  // nlohmann keeps the last of two equal keys; another reader may keep the
  // first, so {"division":"open","division":"closed"} would mean two things.
  // Keys are compared decoded ("a" equals "\u0061").
  std::vector<Frame> frames;
  const auto track = [&frames](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    const auto element_done = [&frames] {
      if (!frames.empty() && !frames.back().object) ++frames.back().index;
    };
    switch (event) {
      case E::object_start:
      case E::array_start:
        frames.emplace_back();
        frames.back().object = event == E::object_start;
        break;
      case E::key: {
        Frame& f = frames.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second)
          throw JsonInputError("duplicate key \"" + shown(f.key) + "\" in the object at " + object_path(frames) +
                               "; every key may appear once in an object (which one counts would depend on the reader)");
        break;
      }
      case E::object_end:
      case E::array_end:
        frames.pop_back();
        element_done();
        break;
      case E::value:
        element_done();
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), track);
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
