#include "common/text.h"

#include <cmath>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <utility>

namespace lra::host::text {

std::string bytes_text(int64_t bytes) {
  char buf[48];
  const double b = static_cast<double>(bytes);
  if (bytes < 1000) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else if (bytes < 1'000'000) std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  else if (bytes < 1'000'000'000) std::snprintf(buf, sizeof buf, "%.2f MB", b / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  return buf;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kBlanks = " \t\r\n";
  const auto b = s.find_first_not_of(kBlanks);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(kBlanks);
  return s.substr(b, e - b + 1);
}

std::optional<std::size_t> empty_list_item(std::string_view s, char sep) {
  std::size_t index = 0, start = 0;
  for (;;) {
    const std::size_t end = std::min(s.find(sep, start), s.size());
    if (trim(s.substr(start, end - start)).empty()) return index;
    if (end == s.size()) return std::nullopt;
    start = end + 1;
    ++index;
  }
}

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

namespace {

// The length of the UTF-8 sequence at text[i] when it is a character XML 1.0
// allows, else 0 (a bad or overlong sequence, a surrogate, U+FFFE/U+FFFF).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  const std::size_t n = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (n == 0 || lead > 0xF4 || i + n > text.size()) return 0;
  uint32_t cp = lead & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) {
    return 0;
  }
  return n;
}

}  // namespace

// Text as XML character data: markup escaped, and what XML
// 1.0 cannot carry (control characters, invalid UTF-8) replaced by U+FFFD,
// since plugin names, labels and error messages can be anything.
namespace {

bool invisible(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x00AD || cp == 0x061C || cp == 0x180E ||
         (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x2064) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

uint32_t decode(std::string_view text, std::size_t i, std::size_t n) {
  if (n == 1) return static_cast<unsigned char>(text[i]);
  uint32_t cp = static_cast<unsigned char>(text[i]) & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  return cp;
}

}  // namespace

std::string visible_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char buf[16];
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const std::size_t n = c < 0x80 ? 1 : utf8_length(text, i);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", c);
      out += buf;
      ++i;
      continue;
    }
    const uint32_t cp = decode(text, i, n);
    if (invisible(cp) && cp != '\t' && cp != '\n' && cp != '\r') {
      std::snprintf(buf, sizeof buf, "<U+%04X>", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string xml_escape(std::string_view raw) {
  const std::string text = visible_text(raw);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string markdown_cell(std::string_view text, MarkdownEscape how) {
  std::string out;
  if (how == MarkdownEscape::backslashes) {
    for (char c : text) {
      if (c == '\n' || c == '\r') {
        out += ' ';
      } else {
        if (std::string_view("\\|`*[]<>").find(c) != std::string_view::npos) out += '\\';
        out += c;
      }
    }
    return out;
  }
  // Quotes are plain text in Markdown and stay readable (no &quot; in option values).
  std::string escaped = xml_escape(text);
  for (const auto& [entity, plain] : {std::pair<std::string, std::string>{"&quot;", "\""}, {"&apos;", "'"}})
    for (auto at = escaped.find(entity); at != std::string::npos; at = escaped.find(entity, at + plain.size()))
      escaped.replace(at, entity.size(), plain);
  for (char c : escaped) {
    switch (c) {
      case '\n':
      case '\r':
      case '\t': out += ' '; break;
      case '|':
      case '\\':
      case '`':
      case '*':
      case '[':
      case ']':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

std::string short_number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string human_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "-";
  char b[48];
  if (s < 60) {
    std::snprintf(b, sizeof b, "%.0f s", s);
    return b;
  }
  const auto whole = static_cast<long long>(std::llround(s));
  if (s < 3600) return std::to_string(whole / 60) + " min " + std::to_string(whole % 60) + " s";
  if (s < 48 * 3600) {
    const auto minutes = static_cast<long long>(std::llround(s / 60));
    std::snprintf(b, sizeof b, "%lld h %02lld min", minutes / 60, minutes % 60);
    return b;
  }
  std::snprintf(b, sizeof b, "%.1f days", s / 86400);
  return b;
}

std::string progress_note(std::size_t done, std::size_t total, double elapsed) {
  std::string out = "[" + std::to_string(done + 1) + "/" + std::to_string(total);
  if (done > 0) {
    const double left = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
    out += ", " + human_duration(elapsed) + " so far, about " + human_duration(left) + " left";
  }
  return out + "]";
}

}  // namespace lra::host::text
