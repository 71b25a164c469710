#include "bench/run_prediction.h"

#include <variant>

#include "lra/status.h"
#include "manifest/official_data.h"
#include "manifest/releases.h"
#include "common/sha256.h"

namespace lra::host::bench {
namespace {

int64_t data_int(const Manifest& m, const std::string& key) {
  const auto it = m.data.find(key);
  if (it == m.data.end() || !std::holds_alternative<int64_t>(it->second)) return -1;
  return std::get<int64_t>(it->second);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The current release's counts of `task` (for "0 = all" in a [data] section).
OfficialData current_official_counts(const Manifest& m) {
  const auto release = current_release(m.task);
  const auto row = release ? find_official_data(release->version, m.task) : std::nullopt;
  if (!row) throw Error(ErrorKind::usage, m.source + ": task '" + m.task + "' has no official split sizes to predict from");
  return *row;
}

}  // namespace

SplitSizes run_split_sizes(const Manifest& m) {
  if (const auto release = find_release(m.task, sha256_hex(m.text)); release && m.overrides.empty()) {
    if (const auto row = find_official_data(release->version, m.task, setting_name(m)))
      return {row->train, row->val, row->test, "official data of " + release->version +
                                                   (m.setting.empty() ? "" : ", setting " + m.setting) +
                                                   " (manifests/official-data.toml)"};
  }
  const std::string from = m.source + " [data]";
  if (const int64_t val = data_int(m, "val_size"), test = data_int(m, "test_size"); val > 0 && test > 0)
    return {data_int(m, "train_size"), val, test, from + " val_size / test_size"};
  if (const int64_t images = data_int(m, "images"); images > 0)
    return {images - 2 * (images / 10), images / 10, images / 10, from + " images, split 80/10/10"};
  if (const int64_t eval = data_int(m, "eval_examples"); eval >= 0) {
    const OfficialData all = current_official_counts(m);
    const int64_t train = data_int(m, "train_examples");
    // A subset is at most the whole split (the readers cap it the same way).
    auto pick = [](int64_t asked, int64_t whole) { return asked > 0 && asked < whole ? asked : whole; };
    return {pick(train, all.train), pick(eval, all.val), pick(eval, all.test),
            from + " train_examples / eval_examples (0 = all)"};
  }
  throw Error(ErrorKind::usage, from + ": cannot tell the validation and test split sizes (expected val_size and "
                                "test_size, images, or eval_examples)");
}

RunSchedule run_schedule(const TrainConfig& t, const SplitSizes& s) {
  RunSchedule r;
  r.train_steps = t.steps;
  r.validations = t.steps / t.eval_every + (t.steps % t.eval_every != 0 ? 1 : 0);
  r.val_batches_each = ceil_div(s.val, t.eval_batch_size);
  r.test_batches = ceil_div(s.test, t.eval_batch_size);
  return r;
}

RunPrediction predict_run(const RunSchedule& s, double train_steps_per_s, double eval_batches_per_s) {
  if (!(train_steps_per_s > 0) || !(eval_batches_per_s > 0))
    throw Error(ErrorKind::internal, "predict_run: rates must be positive");
  return {static_cast<double>(s.train_steps) / train_steps_per_s,
          static_cast<double>(s.eval_batches()) / eval_batches_per_s};
}

}  // namespace lra::host::bench
