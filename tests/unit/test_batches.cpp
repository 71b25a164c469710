// Batching, the training data order and the dataset fingerprint.
#include <gtest/gtest.h>

#include <set>

#include "train/batches.h"
#include "train/prefetch.h"

using namespace lra::host;

namespace {
lra::Split split_of(const std::vector<std::vector<int32_t>>& rows, const std::vector<int32_t>& labels) {
  lra::Split s;
  for (const auto& r : rows) {
    s.tokens.insert(s.tokens.end(), r.begin(), r.end());
    s.offsets.push_back(static_cast<int64_t>(s.tokens.size()));
  }
  s.labels = labels;
  return s;
}
}  // namespace

TEST(Batches, PadsAndTruncatesToMaxLen) {
  auto s = split_of({{1, 2, 3}, {4, 5, 6, 7, 8, 9}}, {0, 1});
  auto b = make_batch(s, {1, 0}, 4);
  EXPECT_TRUE(torch::equal(b.ids, torch::tensor({4, 5, 6, 7, 1, 2, 3, 0}, torch::kLong).view({2, 4})));
  EXPECT_TRUE(torch::equal(b.labels, torch::tensor({1, 0}, torch::kLong)));
  EXPECT_TRUE(torch::equal(b.mask, torch::tensor({1, 1, 1, 1, 1, 1, 1, 0}, torch::kBool).view({2, 4})));
  EXPECT_FALSE(b.ids2.defined());
}

TEST(Batches, MaskFollowsLengthsNotTokenIds) {
  // Pixel value 0 is a real token in image tasks (LRA quirk Q1 masked it).
  auto s = split_of({{0, 0, 7}, {5}}, {0, 1});
  auto b = make_batch(s, {0, 1}, 3);
  EXPECT_TRUE(torch::equal(b.mask, torch::tensor({1, 1, 1, 1, 0, 0}, torch::kBool).view({2, 3})));
}

TEST(Batches, PairedSplitsFillTheSecondInput) {
  auto s = split_of({{1, 2}, {3}}, {0, 1});
  s.tokens2 = {9, 8, 7, 6};
  s.offsets2 = {0, 1, 4};
  auto b = make_batch(s, {1, 0}, 2);
  ASSERT_TRUE(b.ids2.defined());
  EXPECT_TRUE(torch::equal(b.ids2, torch::tensor({8, 7, 9, 0}, torch::kLong).view({2, 2})));
  EXPECT_TRUE(torch::equal(b.mask2, torch::tensor({1, 1, 1, 0}, torch::kBool).view({2, 2})));
  auto half = b.narrow(1, 1);
  EXPECT_TRUE(torch::equal(half.ids2, torch::tensor({9, 0}, torch::kLong).view({1, 2})));
  lra::TaskInfo info;
  info.vocab_size = 10;
  info.num_classes = 2;
  EXPECT_THROW(validate_split(s, info, "train"), lra::Error);  // not declared paired
  info.paired = true;
  EXPECT_NO_THROW(validate_split(s, info, "train"));
  s.offsets2 = {0, 1};
  EXPECT_THROW(validate_split(s, info, "train"), lra::Error);  // second input missing for an example
}

TEST(Batches, IndexStreamIsSeededAndCoversEachEpoch) {
  IndexStream a(10, 5), b(10, 5), c(10, 6);
  auto ea = a.next(10), eb = b.next(10), ec = c.next(10);
  EXPECT_EQ(ea, eb);
  EXPECT_NE(ea, ec);
  EXPECT_EQ(std::set<int64_t>(ea.begin(), ea.end()).size(), 10u);
  auto second = a.next(10);
  EXPECT_EQ(std::set<int64_t>(second.begin(), second.end()).size(), 10u);
  EXPECT_NE(ea, second);
}

TEST(Batches, FingerprintFollowsContent) {
  lra::Dataset d;
  d.train = split_of({{1, 2}}, {0});
  d.val = split_of({{3}}, {1});
  d.test = split_of({{4}}, {1});
  const auto f1 = dataset_fingerprint(d);
  EXPECT_EQ(f1, dataset_fingerprint(d));
  d.test.labels[0] = 0;
  EXPECT_NE(f1, dataset_fingerprint(d));
  EXPECT_EQ(f1.rfind("sha256:", 0), 0u);
}

TEST(Batches, OutOfRangeIdsAreDataErrors) {
  lra::TaskInfo info;
  info.vocab_size = 5;
  info.num_classes = 2;
  EXPECT_NO_THROW(validate_split(split_of({{1, 4}}, {1}), info, "train"));
  EXPECT_THROW(validate_split(split_of({{1, 5}}, {1}), info, "train"), lra::Error);
  EXPECT_THROW(validate_split(split_of({{1}}, {2}), info, "train"), lra::Error);
}

// Sequence tasks (SDK 1.4): a target per token, padded and truncated with the tokens.
TEST(Batches, SequenceTargetsFollowTheirTokens) {
  auto s = split_of({{1, 2, 3}, {4, 5, 6, 7, 8, 9}}, {});
  lra::SplitTargets t;
  t.targets = {-100, 5, -100, 6, -100, -100, -100, 7, 8};
  auto b = make_batch(s, {1, 0}, 4, &t);
  EXPECT_FALSE(b.labels.defined());
  EXPECT_TRUE(torch::equal(b.targets, torch::tensor({6, -100, -100, -100, -100, 5, -100, -100}, torch::kLong).view({2, 4})));
  EXPECT_EQ(scored_positions(s, t, {0, 1}, 4), 2);  // 7 and 8 lie past max_len
  EXPECT_EQ(scored_positions(s, t, {0, 1}, 100), 4);
  EXPECT_TRUE(torch::equal(b.narrow(1, 1).targets, b.targets.narrow(0, 1, 1)));
}

TEST(Batches, SequenceTargetsAreChecked) {
  lra::TaskInfo info;
  info.vocab_size = 10;
  info.num_classes = 0;
  lra::SequenceTargets seq;
  seq.num_classes = 4;
  seq.cell_names = {"a", "b"};
  const auto s = split_of({{1, 2}, {3}}, {});
  EXPECT_NO_THROW(validate_split(s, info, "train"));
  auto check = [&](std::vector<int32_t> targets, std::vector<int32_t> cells = {}) {
    lra::SplitTargets t;
    t.targets = std::move(targets);
    t.cells = std::move(cells);
    validate_split_targets(s, t, seq, "train");
  };
  EXPECT_NO_THROW(check({-100, 3, 0}));
  EXPECT_NO_THROW(check({-100, 3, 0}, {1, 0}));
  auto message = [&](std::vector<int32_t> targets, std::vector<int32_t> cells = {}) -> std::string {
    try {
      check(std::move(targets), std::move(cells));
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::data);
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(message({-100, 3}).find("2 targets for 3 tokens"), std::string::npos);
  EXPECT_NE(message({-100, 4, 0}).find("example 0 has target 4 at position 1 outside [0, 4)"), std::string::npos);
  EXPECT_NE(message({-100, -7, 0}).find("target -7"), std::string::npos);
  EXPECT_NE(message({-100, 1, -100}).find("example 1 has no scored position"), std::string::npos);
  EXPECT_NE(message({-100, 1, 0}, {0}).find("1 cells for 2 examples"), std::string::npos);
  EXPECT_NE(message({-100, 1, 0}, {0, 2}).find("cell 2"), std::string::npos);
  // Labels on a sequence task are refused too.
  lra::SplitTargets t;
  t.targets = {-100, 3, 0};
  EXPECT_THROW(validate_split_targets(split_of({{1, 2}, {3}}, {0, 1}), t, seq, "train"), lra::Error);
}

TEST(Batches, SequenceFingerprintsCoverTargetsAndLeaveClassificationAlone) {
  lra::Dataset d;
  d.train = split_of({{1, 2}}, {0});
  d.val = split_of({{3}}, {1});
  d.test = split_of({{4}}, {1});
  const auto classification = dataset_fingerprint(d);
  d.sequence.train.targets = {1, 2};  // ignored: sequence.num_classes is 0
  EXPECT_EQ(dataset_fingerprint(d), classification);
  lra::Dataset q;
  q.train = split_of({{1, 2}}, {});
  q.val = split_of({{3}}, {});
  q.test = split_of({{4}}, {});
  q.sequence.num_classes = 5;
  q.sequence.train.targets = {-100, 2};
  q.sequence.val.targets = {1};
  q.sequence.test.targets = {3};
  const auto f = dataset_fingerprint(q);
  q.sequence.test.targets = {4};
  EXPECT_NE(dataset_fingerprint(q), f);
  q.sequence.test.targets = {3};
  EXPECT_EQ(dataset_fingerprint(q), f);
  q.sequence.cell_names = {"x"};
  EXPECT_NE(dataset_fingerprint(q), f);
  EXPECT_NE(split_fingerprint("test", q.test, &q.sequence.test), split_fingerprint("test", q.test));
  EXPECT_DOUBLE_EQ(majority_target_rate(q.sequence.train, 5), 1.0);
  EXPECT_EQ(split_targets(q, q.val), &q.sequence.val);
  EXPECT_EQ(split_targets(d, d.val), nullptr);
}

TEST(Batches, MajorityClassRate) {
  EXPECT_DOUBLE_EQ(majority_class_rate(split_of({{1}, {1}, {1}, {1}}, {2, 2, 1, 2}), 3), 0.75);
}

namespace lra::host {
namespace {

TEST(Prefetch, BatchesArriveInTheStreamsOrder) {
  std::vector<std::vector<int32_t>> rows;
  std::vector<int32_t> labels;
  for (int i = 0; i < 40; ++i) {
    rows.push_back({i + 1, i + 2});
    labels.push_back(i % 2);
  }
  const lra::Split s = split_of(rows, labels);
  IndexStream direct(40, 7), background(40, 7);
  BatchPrefetcher prefetch([&] { return make_batch(s, background.next(6), 4); }, 3, false);
  for (int step = 0; step < 25; ++step) {  // more than one epoch
    auto want = make_batch(s, direct.next(6), 4);
    auto got = prefetch.next();
    ASSERT_TRUE(got.ids.equal(want.ids)) << "step " << step;
    ASSERT_TRUE(got.labels.equal(want.labels)) << "step " << step;
  }
}

TEST(Prefetch, AFailureReachesTheCaller) {
  int calls = 0;
  BatchPrefetcher prefetch(
      [&]() -> Batch {
        if (++calls == 3) throw std::runtime_error("batch 3 broke");
        Batch b;
        b.ids = at::zeros({1, 1}, at::kLong);
        return b;
      },
      2, false);
  prefetch.next();
  prefetch.next();
  EXPECT_THROW(
      {
        try {
          prefetch.next();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "batch 3 broke");
          throw;
        }
      },
      std::runtime_error);
}

}  // namespace
}  // namespace lra::host
