// The MAD task plugins' shared half: [data] options with MAD's baseline
// values, their validation, and the splits drawn in memory. Built once into a
// static library (lra/task.h needs only LibTorch's version header) and linked
// into each of the six plugins (mad_task.cpp) and into the unit tests.
#pragma once

#include <cstdint>
#include <vector>

#include "lra/task.h"
#include "mad_generators.h"

namespace lra::tasks::mad {

struct Config {
  Settings settings;
  int64_t num_train = 0, num_val = 0, num_test = 0;
  uint64_t seed = 0;
};

// The task's [data] keys: MAD's knobs for it, defaults from its baseline.
std::vector<OptionSpec> option_specs(Task task);

// Reads and validates `given` over the defaults; throws lra::Error(rules)
// naming the option and its value.
Config read_config(Task task, const Params& given);

// The stream seed of a split (1 train, 2 validation, 3 test) under the [data] seed.
uint64_t split_stream(uint64_t seed, uint64_t split_tag);

// Fills `out`: train from MAD's training distribution (is_training = True),
// validation and test from its evaluation one, each its own stream.
void load_dataset(Task task, const Params& params, int threads, Dataset* out);

}  // namespace lra::tasks::mad
