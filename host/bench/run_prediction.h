// bench/run_prediction.h — what a whole `lrahost run` of a manifest costs,
// from measured rates: the number of training steps, validation passes and
// evaluation batches the training loop performs (host/train/training_loop.cpp,
// host/train/trainer.cpp), and the wall time they take at a measured training
// steps/s and evaluation batches/s. Pure arithmetic, unit-tested.
#pragma once

#include <cstdint>
#include <string>

#include "manifest/manifest.h"

namespace lra::host::bench {

// Examples per split of the data a run of the manifest trains and evaluates on.
struct SplitSizes {
  int64_t train = 0, val = 0, test = 0;
  std::string source;  // where the counts come from, for the report
};

// Released manifests: the official-data registry's row for that release
// (manifests/official-data.toml). Others: read from the [data] section the
// way each task plugin reads it (val_size/test_size; eval_examples, 0 = the
// official count; images split 80/10/10). lra::Error(usage) when the counts
// cannot be known without the data.
SplitSizes run_split_sizes(const Manifest& m);

// What the training loop does over a whole run.
struct RunSchedule {
  int64_t train_steps = 0;
  int64_t validations = 0;          // after every eval_every steps and after the last one
  int64_t val_batches_each = 0;     // ceil(val / eval_batch_size): the last one may be partial
  int64_t test_batches = 0;         // one pass over the test split at the end
  int64_t eval_batches() const { return validations * val_batches_each + test_batches; }
};

RunSchedule run_schedule(const TrainConfig& t, const SplitSizes& s);

struct RunPrediction {
  double train_s = 0, eval_s = 0;
  double pretrain_s = 0;  // a self-pretraining manifest's first phase: its steps / its measured steps/s
  double total_s() const { return pretrain_s + train_s + eval_s; }
};

// Every evaluation batch is costed as a full one (an upper bound for the
// partial last batch of each pass). Rates must be > 0.
RunPrediction predict_run(const RunSchedule& s, double train_steps_per_s, double eval_batches_per_s);

}  // namespace lra::host::bench
