// common/plugin_identity.h — what a plugin's name, version and description
// may be: checked when a descriptor is read from a .so (exit 3) and when a
// result.json names its plugin (verify: invalid). A name is shown in every
// table, page and log line and becomes part of run folder names, so it is one
// short word; the lengths are the descriptor's own fields (lra/abi.h), the
// terminating NUL excluded, so a record without its NUL is refused too.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/text.h"
#include "lra/abi.h"

namespace lra::host {

inline constexpr std::size_t kMaxPluginNameBytes = sizeof(lra_plugin_info::name) - 1;                // 63
inline constexpr std::size_t kMaxPluginVersionBytes = sizeof(lra_plugin_info::version) - 1;          // 31
inline constexpr std::size_t kMaxPluginDescriptionBytes = sizeof(lra_plugin_info::description) - 1;  // 255

namespace plugin_identity_detail {

inline bool is_word_char(char c, bool plus) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || (plus && c == '+');
}

// The value as a message shows it: invisible characters written out, cut after 64 bytes.
inline std::string shown(std::string_view s) {
  return "'" + text::visible_text(s.substr(0, 64)) + (s.size() > 64 ? "...' (" + std::to_string(s.size()) + " bytes)" : "'");
}

inline std::optional<std::string> word_problem(std::string_view field, std::string_view v, std::size_t max,
                                               bool plus) {
  const std::string alphabet = std::string("A-Z a-z 0-9 . _ -") + (plus ? " +" : "");
  if (v.empty()) return std::string(field) + " is empty; expected 1 to " + std::to_string(max) + " characters of " + alphabet;
  if (v.size() > max)
    return std::string(field) + " " + shown(v) + " is longer than " + std::to_string(max) + " bytes, the limit";
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!is_word_char(v[i], plus))
      return std::string(field) + " " + shown(v) + " has a character outside " + alphabet + " at byte " +
             std::to_string(i);
  return std::nullopt;
}

}  // namespace plugin_identity_detail

// Why `name` cannot name a plugin (1..63 characters of A-Z a-z 0-9 . _ -), or nullopt.
inline std::optional<std::string> plugin_name_problem(std::string_view name) {
  return plugin_identity_detail::word_problem("plugin name", name, kMaxPluginNameBytes, false);
}

// Why `version` cannot be a plugin's version (1..31 characters of A-Z a-z 0-9 . _ - +), or nullopt.
inline std::optional<std::string> plugin_version_problem(std::string_view version) {
  return plugin_identity_detail::word_problem("plugin version", version, kMaxPluginVersionBytes, true);
}

// Why `description` cannot be a plugin's description (at most 255 bytes of
// visible text: no control, bidi or invisible characters, valid UTF-8), or nullopt.
inline std::optional<std::string> plugin_description_problem(std::string_view description) {
  using plugin_identity_detail::shown;
  if (description.size() > kMaxPluginDescriptionBytes)
    return "plugin description " + shown(description) + " is longer than " +
           std::to_string(kMaxPluginDescriptionBytes) + " bytes, the limit";
  if (text::visible_text(description) != description || description.find_first_of("\t\r\n") != std::string_view::npos)
    return "plugin description " + shown(description) +
           " has a control, invisible or bidi character or invalid UTF-8; write one line of visible text";
  return std::nullopt;
}

}  // namespace lra::host
