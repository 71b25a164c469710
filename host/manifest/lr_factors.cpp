#include "manifest/lr_factors.h"

#include <algorithm>

#include "common/text.h"

namespace lra::host {
const std::vector<std::string>& lr_factor_names() {
  static const std::vector<std::string> names = {
      "constant",    "linear_warmup", "rsqrt_decay", "rsqrt_normalized_decay",
      "decay_every", "cosine_decay",  "wsd"};
  return names;
}

std::optional<std::vector<LrFactor>> parse_lr_factors(std::string_view spec, std::string* bad) {
  std::vector<LrFactor> out;
  const auto& names = lr_factor_names();
  size_t start = 0;
  while (true) {
    size_t star = spec.find('*', start);
    std::string_view part =
        text::trim(spec.substr(start, star == std::string_view::npos ? std::string_view::npos : star - start));
    auto it = std::find(names.begin(), names.end(), part);
    if (it == names.end()) {
      if (bad) *bad = std::string(part);
      return std::nullopt;
    }
    out.push_back(static_cast<LrFactor>(it - names.begin()));
    if (star == std::string_view::npos) break;
    start = star + 1;
  }
  return out;
}

bool factor_needs_warmup(LrFactor f) {
  return f == LrFactor::linear_warmup || f == LrFactor::rsqrt_decay ||
         f == LrFactor::rsqrt_normalized_decay || f == LrFactor::wsd;
}

}  // namespace lra::host
