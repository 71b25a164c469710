// The private test set of a generated task (ListOps, Pathfinder, Path-X):
// fresh examples from the task's own generator, with the run's [data]
// settings but a seed only the verifier knows, so a model that trained on the
// public test split scores visibly lower on them. And the test that says
// whether a gap between the two accuracies is more than chance.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "lra/task.h"
#include "plugins/loader.h"

namespace lra::host {

// The [data] settings for a private set of about `examples` examples drawn
// with `secret_seed`: the run's settings with the seed replaced and the size
// keys scaled (test_size = examples, train_size = val_size = 1 for ListOps;
// images = examples for the Pathfinder family). nullopt when the task has no
// seed and size keys of a generator, i.e. its data are downloaded.
// A task that draws its examples in memory (`in_memory`: a sequence task such
// as mqar, whose [data] sizes are a grid of cells) keeps its sizes: its
// private set is the test split drawn at the secret seed (draw_private_test_split).
std::optional<lra::Params> private_set_params(const lra::Params& run_params, uint64_t secret_seed, int64_t examples,
                                              bool in_memory = false);

// The test split, and a sequence task's targets for it, of a task that draws
// its examples in memory, at the private set's settings.
std::pair<lra::Split, lra::SplitTargets> draw_private_test_split(const LoadedPlugin& task, const lra::Params& params,
                                                                 int threads);

// Generates (under `scratch`) and loads the private set; every split of it is
// unseen, so all of them are returned as one split.
lra::Split draw_private_set(const LoadedPlugin& task, const lra::Params& params, const std::filesystem::path& scratch,
                            int threads);

// An accuracy as the re-evaluation's report lines write it: "93.44%".
std::string percent(double fraction);

struct ProportionTest {
  double p1 = 0, p2 = 0;  // the two accuracies
  double gap = 0;         // p1 - p2
  double z = 0;
  double p_value = 1;     // one-sided: P(a gap this large or larger | both accuracies equal)
};

// Whether k/n is above `rate` by more than chance: the exact one-sided
// binomial tail P(X >= k | n, rate) as p_value (p1 = k/n, p2 = rate).
ProportionTest above_rate_test(int64_t k, int64_t n, double rate);

// Appends every example of `from` to `to` (both paired or both not).
void append_split(lra::Split& to, const lra::Split& from);

// The pooled two-proportion z-test of k1/n1 against k2/n2 (one-sided, H1: p1 > p2).
ProportionTest two_proportion_test(int64_t k1, int64_t n1, int64_t k2, int64_t n2);

}  // namespace lra::host
