#include "plot/svg_text.h"

#include <cstdio>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>

namespace lra::host::svg {

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

// Fixed-point text, independent of the locale. Non-finite values become 0 so
// that no "nan" or "inf" ever reaches a report.
std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) v = 0;
  char buf[400];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  std::string s(buf, r.ptr);
  if (s[0] == '-' && s.find_first_of("123456789") == std::string::npos) s.erase(0, 1);
  return s;
}

// A coordinate: two decimals, trailing zeros dropped.
std::string coord(double v) {
  std::string s = fixed(v, 2);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

// At most `max_chars` characters (UTF-8 code points), "…" marking a cut.
std::string shorten(const std::string& text, std::size_t max_chars) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (++chars == max_chars) return text.substr(0, i) + "…";
  }
  return text;
}


// 5-10 ticks at multiples of m × 10^e, m in {1, 2, 5} (2.5 only where none of
// those gives 5-10). Steps are tried from large to small; consecutive ones
// differ by at most 2x, so the first with >= 5 ticks has <= 10 (only the jump
// 5 -> 2 is 2.5x, which 2.5 bridges).
std::vector<Tick> linear_ticks(double lo, double hi) {
  struct Step {
    double m;
    int e;
    double size() const { return m * std::pow(10.0, e); }
    long first(double from) const { return static_cast<long>(std::ceil(from / size() - 1e-9)); }
    long last(double to) const { return static_cast<long>(std::floor(to / size() + 1e-9)); }
  };
  auto ticks = [&](const Step& s) {
    const int decimals = std::max(0, -s.e) + (s.m == 2.5 && s.e <= 0 ? 1 : 0);
    std::vector<Tick> out;
    for (long i = s.first(lo); i <= s.last(hi); ++i) {
      const double v = static_cast<double>(i) * s.size();
      out.push_back({v, fixed(v, decimals)});
    }
    return out;
  };
  const int top = static_cast<int>(std::ceil(std::log10(hi - lo)));
  std::optional<Step> step_25;  // the first 2.5 step with 5-10 ticks
  // Three decades suffice: at 10^(top-2) the step is below a tenth of the span.
  for (int e = top; e >= top - 2; --e) {
    for (double m : {5.0, 2.5, 2.0, 1.0}) {
      const Step s{m, e};
      const long count = s.last(hi) - s.first(lo) + 1;
      if (count < 5) continue;
      if (m == 2.5) {
        if (count <= 10 && !step_25) step_25 = s;
        continue;
      }
      return count <= 10 || !step_25 ? ticks(s) : ticks(*step_25);
    }
  }
  return {};
}

std::string cross_path(double x, double y, double r) {
  return "M" + coord(x - r) + " " + coord(y - r) + " L" + coord(x + r) + " " + coord(y + r) + " M" +
         coord(x - r) + " " + coord(y + r) + " L" + coord(x + r) + " " + coord(y - r);
}

}  // namespace lra::host::svg
