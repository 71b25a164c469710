#include "reevaluation/private_set.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "data/task_data.h"
#include "lra/status.h"

namespace lra::host {

std::optional<lra::Params> private_set_params(const lra::Params& run_params, uint64_t secret_seed, int64_t examples,
                                              bool in_memory) {
  if (!run_params.count("seed")) return std::nullopt;
  lra::Params p = run_params;
  // Task seeds are non-negative int64.
  p["seed"] = static_cast<int64_t>(secret_seed & 0x3fffffffffffffffull);
  if (in_memory) return p;
  if (run_params.count("test_size")) {
    p["test_size"] = examples;
    if (p.count("train_size")) p["train_size"] = int64_t{1};
    if (p.count("val_size")) p["val_size"] = int64_t{1};
    return p;
  }
  if (run_params.count("images")) {
    p["images"] = examples;
    return p;
  }
  return std::nullopt;
}

lra::Split draw_private_set(const LoadedPlugin& task, const lra::Params& params, const std::filesystem::path& scratch,
                            int threads) {
  const LoadedData d = load_task_data(task, params, scratch, threads, /*allow_generate=*/true, "the private test set");
  lra::Split all;
  append_split(all, d.dataset.train);
  append_split(all, d.dataset.val);
  append_split(all, d.dataset.test);
  return all;
}

std::pair<lra::Split, lra::SplitTargets> draw_private_test_split(const LoadedPlugin& task, const lra::Params& params,
                                                                 int threads) {
  // Drawn in memory: no folder is read or written.
  LoadedData d = load_task_data(task, params, "", threads, /*allow_generate=*/false, "the private test set");
  return {std::move(d.dataset.test), std::move(d.dataset.sequence.test)};
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * fraction);
  return buf;
}

ProportionTest two_proportion_test(int64_t k1, int64_t n1, int64_t k2, int64_t n2) {
  ProportionTest t;
  if (n1 <= 0 || n2 <= 0) return t;
  t.p1 = static_cast<double>(k1) / n1;
  t.p2 = static_cast<double>(k2) / n2;
  t.gap = t.p1 - t.p2;
  const double pooled = static_cast<double>(k1 + k2) / static_cast<double>(n1 + n2);
  const double se = std::sqrt(pooled * (1 - pooled) * (1.0 / n1 + 1.0 / n2));
  if (se == 0) {
    t.z = 0;
    t.p_value = t.gap > 0 ? 0.0 : 1.0;
    return t;
  }
  t.z = t.gap / se;
  t.p_value = 0.5 * std::erfc(t.z / std::sqrt(2.0));
  return t;
}

ProportionTest above_rate_test(int64_t k, int64_t n, double rate) {
  ProportionTest t;
  if (n <= 0) return t;
  t.p1 = static_cast<double>(k) / static_cast<double>(n);
  t.p2 = rate;
  t.gap = t.p1 - rate;
  const double sd = std::sqrt(rate * (1 - rate) / static_cast<double>(n));
  t.z = sd > 0 ? t.gap / sd : 0;
  if (rate <= 0) {
    t.p_value = k > 0 ? 0.0 : 1.0;
    return t;
  }
  if (rate >= 1) {
    t.p_value = 1.0;
    return t;
  }
  // Sum of the binomial pmf from k to n in log space (n is at most a few 10^5).
  const double lr = std::log(rate), lq = std::log1p(-rate);
  const double lgn = std::lgamma(static_cast<double>(n) + 1);
  double tail = 0;
  for (int64_t i = std::max<int64_t>(k, 0); i <= n; ++i) {
    const double di = static_cast<double>(i);
    tail += std::exp(lgn - std::lgamma(di + 1) - std::lgamma(static_cast<double>(n - i) + 1) + di * lr +
                     static_cast<double>(n - i) * lq);
  }
  t.p_value = std::min(1.0, tail);
  return t;
}

void append_split(lra::Split& to, const lra::Split& from) {
  const int64_t base = to.offsets.back(), base2 = to.offsets2.back();
  to.tokens.insert(to.tokens.end(), from.tokens.begin(), from.tokens.end());
  for (size_t i = 1; i < from.offsets.size(); ++i) to.offsets.push_back(base + from.offsets[i]);
  to.tokens2.insert(to.tokens2.end(), from.tokens2.begin(), from.tokens2.end());
  for (size_t i = 1; i < from.offsets2.size(); ++i) to.offsets2.push_back(base2 + from.offsets2[i]);
  to.labels.insert(to.labels.end(), from.labels.begin(), from.labels.end());
}

}  // namespace lra::host
