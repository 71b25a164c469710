#include "train/batches.h"

#include <algorithm>

#include "common/sha256.h"
#include "lra/status.h"

namespace lra::host {

namespace {

// Copies the chosen examples of one input into padded ids and a length mask.
void fill_input(const std::vector<int32_t>& tokens, const std::vector<int64_t>& offsets,
                const std::vector<int64_t>& index, int64_t max_len, at::Tensor* ids, at::Tensor* mask) {
  const auto B = static_cast<int64_t>(index.size());
  *ids = at::zeros({B, max_len}, at::kLong);
  *mask = at::zeros({B, max_len}, at::kBool);
  auto* id = ids->data_ptr<int64_t>();
  auto* m = mask->data_ptr<bool>();
  for (int64_t b = 0; b < B; ++b) {
    const auto i = index[b];
    const auto begin = offsets[i];
    const auto n = std::min<int64_t>(offsets[i + 1] - begin, max_len);
    std::copy_n(tokens.begin() + begin, n, id + b * max_len);
    std::fill_n(m + b * max_len, n, true);
  }
}

}  // namespace

Batch make_input_batch(const lra::Split& split, const std::vector<int64_t>& index, int64_t max_len) {
  Batch out;
  fill_input(split.tokens, split.offsets, index, max_len, &out.ids, &out.mask);
  if (split.offsets2.size() > 1) fill_input(split.tokens2, split.offsets2, index, max_len, &out.ids2, &out.mask2);
  return out;
}

Batch make_batch(const lra::Split& split, const std::vector<int64_t>& index, int64_t max_len,
                 const lra::SplitTargets* targets) {
  Batch out = make_input_batch(split, index, max_len);
  if (targets) {
    const auto B = static_cast<int64_t>(index.size());
    out.targets = at::full({B, max_len}, static_cast<int64_t>(lra::kIgnoreTarget), at::kLong);
    auto* t = out.targets.data_ptr<int64_t>();
    for (int64_t b = 0; b < B; ++b) {
      const auto begin = split.offsets[index[b]];
      const auto n = std::min<int64_t>(split.offsets[index[b] + 1] - begin, max_len);
      std::copy_n(targets->targets.begin() + begin, n, t + b * max_len);
    }
    return out;
  }
  out.labels = at::empty({static_cast<int64_t>(index.size())}, at::kLong);
  auto* lab = out.labels.data_ptr<int64_t>();
  for (size_t b = 0; b < index.size(); ++b) lab[b] = split.labels[index[b]];
  return out;
}

Batch Batch::narrow(int64_t first, int64_t n) const {
  Batch o;
  o.ids = ids.narrow(0, first, n);
  o.mask = mask.narrow(0, first, n);
  if (ids2.defined()) {
    o.ids2 = ids2.narrow(0, first, n);
    o.mask2 = mask2.narrow(0, first, n);
  }
  if (labels.defined()) o.labels = labels.narrow(0, first, n);
  if (targets.defined()) o.targets = targets.narrow(0, first, n);
  return o;
}

void Batch::copy_from(const Batch& b) {
  const auto copy = [](at::Tensor& into, const at::Tensor& from, const char* name) {
    if (into.defined() != from.defined() || (from.defined() && into.sizes() != from.sizes()))
      throw Error(ErrorKind::internal, std::string("a staged batch's ") + name + " changed shape between updates");
    if (from.defined()) into.copy_(from, /*non_blocking=*/true);
  };
  copy(ids, b.ids, "ids");
  copy(mask, b.mask, "mask");
  copy(ids2, b.ids2, "ids2");
  copy(mask2, b.mask2, "mask2");
  copy(labels, b.labels, "labels");
  copy(targets, b.targets, "targets");
}

Batch Batch::to(const at::Device& device) const {
  // non_blocking: a copy from pinned memory (BatchPrefetcher) overlaps with
  // the device's queued work; for pageable memory it is an ordinary copy.
  Batch o;
  o.ids = ids.to(device, /*non_blocking=*/true);
  o.mask = mask.to(device, /*non_blocking=*/true);
  if (ids2.defined()) {
    o.ids2 = ids2.to(device, /*non_blocking=*/true);
    o.mask2 = mask2.to(device, /*non_blocking=*/true);
  }
  if (labels.defined()) o.labels = labels.to(device, /*non_blocking=*/true);
  if (targets.defined()) o.targets = targets.to(device, /*non_blocking=*/true);
  return o;
}

IndexStream::IndexStream(int64_t n, uint64_t seed) : order_(n), pos_(n), rng_(seed) {
  for (int64_t i = 0; i < n; ++i) order_[i] = i;
}

void IndexStream::reshuffle() {
  for (size_t i = order_.size(); i > 1; --i) {
    const size_t j = rng_() % i;  // modulo bias is ~2^-40 here: irrelevant
    std::swap(order_[i - 1], order_[j]);
  }
  pos_ = 0;
}

std::vector<int64_t> IndexStream::next(int64_t count) {
  std::vector<int64_t> out;
  out.reserve(count);
  while (static_cast<int64_t>(out.size()) < count) {
    if (pos_ == order_.size()) reshuffle();
    out.push_back(order_[pos_++]);
  }
  return out;
}

void validate_split(const lra::Split& s, const lra::TaskInfo& info, const std::string& name) {
  auto fail = [&](const std::string& why) {
    throw Error(ErrorKind::data, "task data, " + name + " split: " + why);
  };
  if (s.offsets.empty() || s.offsets.front() != 0) fail("offsets must begin with 0");
  for (size_t i = 1; i < s.offsets.size(); ++i)
    if (s.offsets[i] < s.offsets[i - 1]) fail("offsets decrease at example " + std::to_string(i - 1));
  if (s.size() == 0) fail("no examples");
  // A sequence task (SDK 1.4) has no labels (info.num_classes 0): its targets
  // are checked by validate_split_targets.
  const bool sequence = info.num_classes == 0 && s.labels.empty();
  if (!sequence && s.offsets.size() != s.labels.size() + 1) fail("offsets and labels disagree in length");
  for (size_t i = 0; i < s.labels.size(); ++i) {
    if (s.labels[i] < 0 || s.labels[i] >= info.num_classes)
      fail("example " + std::to_string(i) + " has label " + std::to_string(s.labels[i]) + " outside [0, " +
           std::to_string(info.num_classes) + ")");
  }
  if (s.offsets.back() != static_cast<int64_t>(s.tokens.size())) fail("offsets do not cover the tokens");
  if (info.paired) {
    if (s.offsets2.size() != s.size() + 1) fail("a paired task must give a second input for every example");
    if (s.offsets2.back() != static_cast<int64_t>(s.tokens2.size())) fail("offsets2 do not cover tokens2");
  } else if (s.offsets2.size() > 1) {
    fail("a second input is given but the task is not declared paired");
  }
  for (size_t t = 0; t < s.tokens2.size(); ++t)
    if (s.tokens2[t] < 0 || s.tokens2[t] >= info.vocab_size)
      fail("second input has token id " + std::to_string(s.tokens2[t]) + " outside [0, " +
           std::to_string(info.vocab_size) + ")");
  for (size_t t = 0; t < s.tokens.size(); ++t) {
    if (s.tokens[t] < 0 || s.tokens[t] >= info.vocab_size) {
      auto ex = std::upper_bound(s.offsets.begin(), s.offsets.end(), static_cast<int64_t>(t)) - s.offsets.begin() - 1;
      fail("example " + std::to_string(ex) + " has token id " + std::to_string(s.tokens[t]) + " outside [0, " +
           std::to_string(info.vocab_size) + ")");
    }
  }
}

void validate_split_targets(const lra::Split& s, const lra::SplitTargets& t, const lra::SequenceTargets& seq,
                            const std::string& name) {
  auto fail = [&](const std::string& why) {
    throw Error(ErrorKind::data, "task data, " + name + " split: " + why);
  };
  if (!s.labels.empty())
    fail("a sequence task (Dataset::sequence.num_classes = " + std::to_string(seq.num_classes) +
         ") gives per-position targets, not labels: leave Split::labels empty");
  if (t.targets.size() != s.tokens.size())
    fail("targets and tokens disagree in length (" + std::to_string(t.targets.size()) + " targets for " +
         std::to_string(s.tokens.size()) + " tokens): a sequence task gives one target per token");
  for (size_t i = 0; i < s.size(); ++i) {
    bool scored = false;
    for (int64_t p = s.offsets[i]; p < s.offsets[i + 1]; ++p) {
      const int32_t v = t.targets[p];
      if (v == lra::kIgnoreTarget) continue;
      if (v < 0 || v >= seq.num_classes)
        fail("example " + std::to_string(i) + " has target " + std::to_string(v) + " at position " +
             std::to_string(p - s.offsets[i]) + " outside [0, " + std::to_string(seq.num_classes) +
             ") (unscored positions hold " + std::to_string(lra::kIgnoreTarget) + ")");
      scored = true;
    }
    if (!scored) fail("example " + std::to_string(i) + " has no scored position (every target is ignored)");
  }
  if (!t.cells.empty()) {
    if (t.cells.size() != s.size())
      fail(std::to_string(t.cells.size()) + " cells for " + std::to_string(s.size()) +
           " examples: give one cell per example, or none");
    for (size_t i = 0; i < t.cells.size(); ++i)
      if (t.cells[i] < 0 || t.cells[i] >= static_cast<int32_t>(seq.cell_names.size()))
        fail("example " + std::to_string(i) + " is in cell " + std::to_string(t.cells[i]) + ", but the task names " +
             std::to_string(seq.cell_names.size()) + " cells (SequenceTargets::cell_names)");
  }
}

std::vector<int64_t> all_examples(const lra::Split& split) {
  std::vector<int64_t> index(split.size());
  for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int64_t>(i);
  return index;
}

int64_t scored_positions(const lra::Split& split, const lra::SplitTargets& targets, const std::vector<int64_t>& index,
                         int64_t max_len) {
  int64_t n = 0;
  for (const auto i : index) {
    const auto begin = split.offsets[i];
    const auto end = std::min<int64_t>(split.offsets[i + 1], begin + max_len);
    for (auto p = begin; p < end; ++p) n += targets.targets[p] != lra::kIgnoreTarget;
  }
  return n;
}

const lra::SplitTargets* split_targets(const lra::Dataset& d, const lra::Split& split) {
  if (!d.is_sequence_task()) return nullptr;
  if (&split == &d.train) return &d.sequence.train;
  if (&split == &d.val) return &d.sequence.val;
  if (&split == &d.test) return &d.sequence.test;
  throw Error(ErrorKind::internal, "split_targets: the split is not one of the dataset's");
}

namespace {

void add_targets(Sha256& h, const lra::SplitTargets* t) {
  if (!t) return;  // classification tasks: the fingerprints of every earlier release stay what they were
  h.update(std::string_view("targets"));
  h.update(t->targets.data(), t->targets.size() * sizeof(int32_t));
  h.update(t->cells.data(), t->cells.size() * sizeof(int32_t));
}

void add_split(Sha256& h, const char* name, const lra::Split& s) {
  h.update(std::string_view(name));
  const uint64_t n = s.size();
  h.update(&n, sizeof n);
  h.update(s.offsets.data(), s.offsets.size() * sizeof(int64_t));
  h.update(s.tokens.data(), s.tokens.size() * sizeof(int32_t));
  h.update(s.offsets2.data(), s.offsets2.size() * sizeof(int64_t));
  h.update(s.tokens2.data(), s.tokens2.size() * sizeof(int32_t));
  h.update(s.labels.data(), s.labels.size() * sizeof(int32_t));
}

}  // namespace

std::string split_fingerprint(const char* name, const lra::Split& split, const lra::SplitTargets* targets) {
  Sha256 h;
  add_split(h, name, split);
  add_targets(h, targets);
  return "sha256:" + h.hex_digest();
}

std::string dataset_fingerprint(const lra::Dataset& d) {
  Sha256 h;
  add_split(h, "train", d.train);
  add_targets(h, split_targets(d, d.train));
  add_split(h, "val", d.val);
  add_targets(h, split_targets(d, d.val));
  add_split(h, "test", d.test);
  add_targets(h, split_targets(d, d.test));
  if (d.is_sequence_task()) {
    const int64_t n = d.sequence.num_classes;
    h.update(&n, sizeof n);
    for (const auto& name : d.sequence.cell_names) h.update(std::string_view(name.c_str(), name.size() + 1));
    // SDK 1.5: only a readout other than the default is hashed, so every
    // earlier sequence task's fingerprint stays what it was.
    if (d.sequence.readout != lra::SequenceReadout::every_position) {
      const auto readout = static_cast<int32_t>(d.sequence.readout);
      h.update(std::string_view("readout"));
      h.update(&readout, sizeof readout);
    }
  }
  return "sha256:" + h.hex_digest();
}

std::string split_inputs_fingerprint(const lra::Split& s) {
  Sha256 h;
  h.update(std::string_view("inputs"));
  const uint64_t n = s.offsets.size() - 1;
  h.update(&n, sizeof n);
  h.update(s.offsets.data(), s.offsets.size() * sizeof(int64_t));
  h.update(s.tokens.data(), s.tokens.size() * sizeof(int32_t));
  h.update(s.offsets2.data(), s.offsets2.size() * sizeof(int64_t));
  h.update(s.tokens2.data(), s.tokens2.size() * sizeof(int32_t));
  return "sha256:" + h.hex_digest();
}

double majority_class_rate(const lra::Split& s, int64_t num_classes) {
  std::vector<int64_t> counts(num_classes, 0);
  for (auto l : s.labels) counts[l]++;
  return s.labels.empty() || counts.empty()
             ? 0.0
             : static_cast<double>(*std::max_element(counts.begin(), counts.end())) / s.labels.size();
}

double majority_target_rate(const lra::SplitTargets& t, int64_t num_classes) {
  std::vector<int64_t> counts(num_classes, 0);
  int64_t scored = 0;
  for (auto v : t.targets)
    if (v != lra::kIgnoreTarget && v >= 0 && v < num_classes) ++counts[v], ++scored;
  return scored ? static_cast<double>(*std::max_element(counts.begin(), counts.end())) / scored : 0.0;
}

double majority_rate(const lra::Dataset& d, const lra::Split& split) {
  if (const auto* t = split_targets(d, split)) return majority_target_rate(*t, d.sequence.num_classes);
  return majority_class_rate(split, d.info.num_classes);
}

}  // namespace lra::host
