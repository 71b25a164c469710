#include "reevaluation/private_set.h"

#include <algorithm>
#include <cmath>

#include "data/task_data.h"
#include "lra/status.h"
#include "reevaluation/inputs_file.h"

namespace lra::host {

std::optional<lra::Params> private_set_params(const lra::Params& run_params, uint64_t secret_seed, int64_t examples) {
  if (!run_params.count("seed")) return std::nullopt;
  lra::Params p = run_params;
  // Task seeds are non-negative int64.
  p["seed"] = static_cast<int64_t>(secret_seed & 0x3fffffffffffffffull);
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

}  // namespace lra::host
