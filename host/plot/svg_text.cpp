#include "plot/svg_text.h"

#include <cstdio>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>

namespace lra::host::svg {

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
