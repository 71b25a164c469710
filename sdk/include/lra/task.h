// lra/task.h — the task contract: vocabulary, classes, splits and examples.
//
// A task plugin turns files (or a deterministic generator) into token ids and
// labels — one label per example (a classification task), or from SDK 1.4 one
// target per position (a sequence task: Dataset::sequence; from SDK 1.5 it
// also says how those are read, SequenceTargets::readout). It knows its own
// on-disk layouts; the host owns batching, padding, truncation to the
// manifest's max_len, and fingerprints the loaded content.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lra/options.h"
#include "lra/plugin.h"
#include "lra/status.h"

namespace lra {
inline namespace v1 {

struct TaskInfo {
  int64_t vocab_size = 0;   // ids are in [0, vocab_size); padding is by example length (positions past
                            // it are filled with 0 and masked), so id 0 may be a real token (a black pixel)
  int64_t num_classes = 0;
  int64_t natural_len = 0;  // the task's sequence length before any CLS token
  bool paired = false;      // two inputs per example (e.g. document matching)
  std::vector<std::string> vocabulary;  // token text by id, when meaningful
};

// Examples of one split in flat form: example i is tokens[offsets[i], offsets[i+1]).
// A classification task gives one label per example; a sequence task leaves
// `labels` empty and gives its targets in Dataset::sequence.
struct Split {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> tokens2;  // second input of paired tasks
  std::vector<int64_t> offsets2{0};
  std::vector<int32_t> labels;
  size_t size() const { return offsets.empty() ? 0 : offsets.size() - 1; }  // examples
};

// SDK 1.4 — sequence tasks (docs/abi.md "Sequence tasks"). The target of a
// position that is not scored (PyTorch's ignore_index, Zoology's label -100).
inline constexpr int32_t kIgnoreTarget = -100;

// One split's per-position targets.
struct SplitTargets {
  // Aligned with Split::tokens: example i's targets are
  // targets[offsets[i], offsets[i+1]), a class in [0, SequenceTargets::num_classes)
  // or kIgnoreTarget. The target at position t is what the model must predict
  // after reading tokens 0..t (the host's sequence model is causal), or with
  // SequenceReadout::from_last_state, from the whole example's last state.
  std::vector<int32_t> targets;
  // Optional, empty or one per example: the example's cell, an index into
  // SequenceTargets::cell_names (a grid point such as "length 256, 64 pairs");
  // the host reports accuracy per cell.
  std::vector<int32_t> cells;
};

// SDK 1.5 — how the host's model reads a sequence task's targets.
enum class SequenceReadout : int32_t {
  // A causal model predicts the target at position t at position t, having
  // read tokens 0..t (what every SDK 1.4 sequence task means).
  every_position = 0,
  // An encoder reads the whole example and only its state at the example's
  // last position is kept; a decoder predicts every position's target from
  // that one vector and the position alone (MAD's compression: the target at
  // t may be token t itself, which no position may read directly).
  from_last_state = 1,
};

struct SequenceTargets {
  int64_t num_classes = 0;  // > 0 makes the task a sequence task
  SplitTargets train, val, test;
  std::vector<std::string> cell_names;
  // SDK 1.5, appended (the last member of Dataset, so a 1.4 plugin's layout
  // is a prefix); the host reads it only from plugins built for 1.5 or later.
  SequenceReadout readout = SequenceReadout::every_position;
};

struct Dataset {
  TaskInfo info;
  Split train, val, test;
  std::string source;  // human-readable: which files, generated or release
  // SDK 1.4, appended (members before it keep their offsets for older plugins):
  // a sequence task's targets. A classification task leaves it empty, and the
  // host ignores it for plugins built before 1.4. A sequence task sets
  // info.num_classes to 0 and leaves Split::labels empty.
  SequenceTargets sequence;
  bool is_sequence_task() const { return sequence.num_classes > 0; }
};

// Dataset::source of data read from LRA's own release files begins with
// this. The host then checks a closed run on the official split sizes alone,
// as it does for downloaded data (it cannot know those files' bytes); data an
// lrahost generator wrote keep the fingerprint check (docs/rules.md).
inline constexpr char kLraReleaseSource[] = "LRA release files";

struct DataRequest {
  std::string data_root;       // --data-dir, $LRA_DATA_DIR or the user cache
  Params params;               // the manifest's [data] section, defaults filled in
  int threads = 1;
  bool allow_generate = true;  // false for `lrahost data check`
  bool enforce_sizes = true;   // false for `lrahost data check`: accept the example counts the files hold
};

class TaskPlugin {
 public:
  virtual ~TaskPlugin() = default;
  // The keys the [data] manifest section may hold, with defaults.
  virtual Status data_options(std::vector<OptionSpec>* out) const noexcept = 0;
  // Loads all splits; a synthetic task generates (and caches) when allowed.
  virtual Status load(const DataRequest& request, Dataset* out) const noexcept = 0;
  // Synthetic tasks: writes a dataset of `total` examples into out_dir, laid
  // out so that `--data-dir out_dir` finds it; total <= 0 means the task's
  // default size. Tasks without a generator return an ErrorKind::usage status.
  virtual Status generate(const std::string& out_dir, const Params& params, int64_t total,
                          uint64_t seed, int threads) const noexcept = 0;
};

}  // namespace v1
}  // namespace lra

// Declares a task plugin. CLASS: a default-constructible lra::TaskPlugin subclass.
#define LRA_TASK_PLUGIN(NAME, VERSION, DESCRIPTION, CLASS) \
  LRA_DETAIL_INFO(LRA_KIND_TASK, 0u, NAME, VERSION, DESCRIPTION) \
  LRA_DETAIL_ENTRY(::lra::TaskPlugin, CLASS())
