#include "train/batches.h"

#include <algorithm>

#include "common/sha256.h"
#include "lra/status.h"

namespace lra::host {

Batch make_batch(const lra::Split& split, const std::vector<int64_t>& index, int64_t max_len) {
  const auto B = static_cast<int64_t>(index.size());
  auto ids = at::zeros({B, max_len}, at::kLong);
  auto labels = at::empty({B}, at::kLong);
  auto* id = ids.data_ptr<int64_t>();
  auto* lab = labels.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const auto i = index[b];
    const auto begin = split.offsets[i];
    const auto n = std::min<int64_t>(split.offsets[i + 1] - begin, max_len);
    std::copy_n(split.tokens.begin() + begin, n, id + b * max_len);
    lab[b] = split.labels[i];
  }
  return {ids, labels};
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
  for (size_t t = 0; t < s.tokens.size(); ++t) {
    if (s.tokens[t] < 0 || s.tokens[t] >= info.vocab_size) {
      auto ex = std::upper_bound(s.offsets.begin(), s.offsets.end(), static_cast<int64_t>(t)) - s.offsets.begin() - 1;
      fail("example " + std::to_string(ex) + " has token id " + std::to_string(s.tokens[t]) + " outside [0, " +
           std::to_string(info.vocab_size) + ")");
    }
  }
}

std::string dataset_fingerprint(const lra::Dataset& d) {
  Sha256 h;
  auto add_split = [&](const char* name, const lra::Split& s) {
    h.update(std::string_view(name));
    const uint64_t n = s.size();
    h.update(&n, sizeof n);
    h.update(s.offsets.data(), s.offsets.size() * sizeof(int64_t));
    h.update(s.tokens.data(), s.tokens.size() * sizeof(int32_t));
    h.update(s.offsets2.data(), s.offsets2.size() * sizeof(int64_t));
    h.update(s.tokens2.data(), s.tokens2.size() * sizeof(int32_t));
    h.update(s.labels.data(), s.labels.size() * sizeof(int32_t));
  };
  add_split("train", d.train);
  add_split("val", d.val);
  add_split("test", d.test);
  return "sha256:" + h.hex_digest();
}

double majority_class_rate(const lra::Split& s, int64_t num_classes) {
  std::vector<int64_t> counts(num_classes, 0);
  for (auto l : s.labels) counts[l]++;
  return s.size() ? static_cast<double>(*std::max_element(counts.begin(), counts.end())) / s.size() : 0.0;
}

}  // namespace lra::host
