// Turning a task's flat examples into padded id tensors, the data-order
// stream for training, and the dataset fingerprint.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "lra/task.h"

namespace lra::host {

// The padding mask comes from each example's length, not from the token id:
// image tasks use id 0 for black pixels, which LRA wrongly masked (quirk Q1).
struct Batch {
  at::Tensor ids;     // [B, max_len] int64, padded positions hold 0
  at::Tensor mask;    // [B, max_len] bool, true at real tokens
  at::Tensor ids2;    // paired tasks: the second input (undefined otherwise)
  at::Tensor mask2;
  at::Tensor labels;  // [B] int64; undefined in a batch of inputs alone (make_input_batch)
  // Sequence tasks instead of labels: [B, max_len] int64, the target of each
  // position, lra::kIgnoreTarget where it is not scored (padding included).
  at::Tensor targets;
  // Sequence tasks: scored positions in the whole update's batch (every
  // rank's part), what its loss is averaged over.
  int64_t scored_positions = 0;
  Batch narrow(int64_t first, int64_t n) const;
  Batch to(const at::Device& device) const;
  // Copies `b`'s values into these tensors (same shapes; non-blocking from
  // pinned memory): a staged batch that stays the same tensors (CUDA graphs).
  void copy_from(const Batch& b);
};

// Examples longer than max_len keep their first max_len tokens (as LRA does).
// Paired splits (non-empty offsets2 beyond the first entry) fill ids2/mask2.
// A sequence task's batch gets its per-position targets from `targets` (the
// split's, lra::Dataset::sequence) instead of labels.
Batch make_batch(const lra::Split& split, const std::vector<int64_t>& index, int64_t max_len,
                 const lra::SplitTargets* targets = nullptr);

// The same without labels: what a pretraining phase reads (pretrain/), so a
// label never reaches it.
Batch make_input_batch(const lra::Split& split, const std::vector<int64_t>& index, int64_t max_len);

// An endless stream of example indices: one seeded permutation per epoch.
// Portable by construction (own Fisher-Yates on mt19937_64, no std distributions).
class IndexStream {
 public:
  IndexStream(int64_t n, uint64_t seed);
  std::vector<int64_t> next(int64_t count);

 private:
  void reshuffle();
  std::vector<int64_t> order_;
  size_t pos_ = 0;
  std::mt19937_64 rng_;
};

// Checks ids and labels are in range; throws lra::Error(data) naming the split
// and example, so a task bug never reaches the embedding as an index error.
void validate_split(const lra::Split& split, const lra::TaskInfo& info, const std::string& name);

// 0, 1, ..., split.size() - 1.
std::vector<int64_t> all_examples(const lra::Split& split);

// Scored positions of examples `index` within max_len (a sequence task's).
int64_t scored_positions(const lra::Split& split, const lra::SplitTargets& targets, const std::vector<int64_t>& index,
                         int64_t max_len);

// A sequence task's targets (and cells) match its split's tokens, in range;
// throws lra::Error(data) naming the split, the example and the position.
void validate_split_targets(const lra::Split& split, const lra::SplitTargets& targets,
                            const lra::SequenceTargets& sequence, const std::string& name);

// The targets of one split of `data`: its sequence targets for a sequence
// task, nullptr for a classification task.
const lra::SplitTargets* split_targets(const lra::Dataset& data, const lra::Split& split);

// SHA-256 over the loaded content (ids, offsets, labels of every split, and a
// sequence task's targets and cells, and its readout when it is not
// every_position), so the same data gives the same
// fingerprint whatever files it came from.
// The fingerprint of one split (its name, inputs and labels or targets), so a
// re-evaluation against other data can say which split differs.
std::string split_fingerprint(const char* name, const lra::Split& split, const lra::SplitTargets* targets = nullptr);

std::string dataset_fingerprint(const lra::Dataset& data);

// SHA-256 over one split's inputs alone (ids and offsets of both inputs, no
// labels): names the data a pretraining phase read, and tells the splits apart.
std::string split_inputs_fingerprint(const lra::Split& split);

// Share of the most frequent label (the accuracy of always guessing it).
double majority_class_rate(const lra::Split& split, int64_t num_classes);

// The same for a sequence task: the share of scored positions whose target is
// the most frequent one.
double majority_target_rate(const lra::SplitTargets& targets, int64_t num_classes);

// The one that applies to `split` of `data`.
double majority_rate(const lra::Dataset& data, const lra::Split& split);

}  // namespace lra::host
