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

Batch make_batch(const lra::Split& split, const std::vector<int64_t>& index, int64_t max_len) {
  Batch out = make_input_batch(split, index, max_len);
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
  return o;
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
  if (s.offsets.size() != s.labels.size() + 1) fail("offsets and labels disagree in length");
  if (s.labels.empty()) fail("no examples");
  for (size_t i = 0; i < s.labels.size(); ++i) {
    if (s.labels[i] < 0 || s.labels[i] >= info.num_classes)
      fail("example " + std::to_string(i) + " has label " + std::to_string(s.labels[i]) + " outside [0, " +
           std::to_string(info.num_classes) + ")");
  }
  if (s.offsets.back() != static_cast<int64_t>(s.tokens.size())) fail("offsets do not cover the tokens");
  if (info.paired) {
    if (s.offsets2.size() != s.labels.size() + 1) fail("a paired task must give a second input for every example");
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

namespace {

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

std::string split_fingerprint(const char* name, const lra::Split& split) {
  Sha256 h;
  add_split(h, name, split);
  return "sha256:" + h.hex_digest();
}

std::string dataset_fingerprint(const lra::Dataset& d) {
  Sha256 h;
  add_split(h, "train", d.train);
  add_split(h, "val", d.val);
  add_split(h, "test", d.test);
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
  return s.size() ? static_cast<double>(*std::max_element(counts.begin(), counts.end())) / s.size() : 0.0;
}

}  // namespace lra::host
