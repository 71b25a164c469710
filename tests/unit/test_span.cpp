// The required attention span arithmetic (host/span): hand-computed cases for
// the definition and every stated choice (padding, CLS, renormalisation,
// per-sequence averaging, paired documents), and batch accumulation.
#include <gtest/gtest.h>

#include <vector>

#include <ATen/ATen.h>

#include "lra/status.h"
#include "span/gradient_span.h"
#include "span/span.h"

namespace span = lra::host::span;

namespace {

// Uniform attention of every query over the first n of L positions: [B, H, L, L].
at::Tensor uniform_over_first(int64_t B, int64_t H, int64_t L, int64_t n) {
  auto p = at::zeros({B, H, L, L}, at::kFloat);
  p.narrow(3, 0, n).fill_(1.0 / static_cast<double>(n));
  return p;
}

at::Tensor first_valid(int64_t B, int64_t L, int64_t n) {
  auto m = at::zeros({B, L}, at::kBool);
  m.narrow(1, 0, n).fill_(true);
  return m;
}

// Mean |i - j| over an n x n uniform attention: (n^2 - 1) / (3n).
double uniform_span(int64_t n) { return (static_cast<double>(n * n) - 1.0) / (3.0 * static_cast<double>(n)); }

span::Summary summarise(const at::Tensor& probs, const at::Tensor& valid, bool cls) {
  span::Accumulator acc;
  acc.add({span::module_sums(probs, valid, cls)});
  return acc.summary();
}

}  // namespace

TEST(Span, UniformAttentionOverAllTokens) {
  for (int64_t L : {1, 2, 5, 64}) {
    auto s = summarise(uniform_over_first(2, 3, L, L), first_valid(2, L, L), false);
    EXPECT_NEAR(s.span, uniform_span(L), 1e-6) << "L = " << L;
    ASSERT_EQ(s.per_layer.size(), 1u);
    EXPECT_NEAR(s.per_layer[0], uniform_span(L), 1e-6);
    ASSERT_EQ(s.per_head[0].size(), 3u);
    for (double h : s.per_head[0]) EXPECT_NEAR(h, uniform_span(L), 1e-6);
    EXPECT_EQ(s.sequences, 2);
    EXPECT_EQ(s.queries, 2 * 3 * L);
    EXPECT_NEAR(s.excluded_mass, 0.0, 1e-7);
  }
  EXPECT_NEAR(uniform_span(5), 1.6, 1e-12);  // 24 / 15: the formula itself, by hand
}

TEST(Span, IdentityAttentionIsZero) {
  const int64_t L = 7;
  auto p = at::eye(L).view({1, 1, L, L}).expand({2, 2, L, L}).contiguous();
  auto s = summarise(p, first_valid(2, L, L), false);
  EXPECT_EQ(s.span, 0.0);
  EXPECT_EQ(s.queries, 2 * 2 * L);
}

TEST(Span, AHandComputedRow) {
  // Three tokens. Row 0 -> [0.5, 0.25, 0.25]: 0.25*1 + 0.25*2 = 0.75.
  // Row 1 -> [0.1, 0.8, 0.1]: 0.2. Row 2 -> [1, 0, 0]: 2. Mean (0.75 + 0.2 + 2) / 3.
  auto p = at::tensor({0.5, 0.25, 0.25, 0.1, 0.8, 0.1, 1.0, 0.0, 0.0}, at::kFloat).view({1, 1, 3, 3});
  auto s = summarise(p, first_valid(1, 3, 3), false);
  EXPECT_NEAR(s.span, (0.75 + 0.2 + 2.0) / 3.0, 1e-6);
}

TEST(Span, PaddedQueriesAndKeysAreExcluded) {
  // 4 real tokens of 6. A mixer that ignored the mask (uniform over all 6):
  // padded keys are dropped and rows renormalised -> uniform over the 4.
  auto ignoring = summarise(uniform_over_first(1, 2, 6, 6), first_valid(1, 6, 4), false);
  EXPECT_NEAR(ignoring.span, uniform_span(4), 1e-6);
  EXPECT_EQ(ignoring.queries, 2 * 4);  // padded query rows are not counted
  EXPECT_NEAR(ignoring.excluded_mass, 2.0 / 6.0, 1e-6);
  // A masking mixer (zero weight on padding); padded rows hold garbage.
  auto p = uniform_over_first(1, 2, 6, 4);
  p.narrow(2, 4, 2).fill_(0.0);
  p.narrow(2, 4, 2).select(3, 5).fill_(1.0);  // would add distance 1 and 0 if counted
  auto masking = summarise(p, first_valid(1, 6, 4), false);
  EXPECT_NEAR(masking.span, uniform_span(4), 1e-6);
  EXPECT_NEAR(masking.excluded_mass, 0.0, 1e-7);
}

TEST(Span, ClsRowAndColumnExcludedAndRowsRenormalised) {
  // Positions: CLS, t1, t2. Row t1 [0.5, 0.25, 0.25] -> [0.5, 0.5] over (t1, t2): 0.5.
  // Row t2 [0.2, 0.6, 0.2] -> [0.75, 0.25]: 0.75. The CLS row [0, 0, 1] is left out.
  auto p = at::tensor({0.0, 0.0, 1.0, 0.5, 0.25, 0.25, 0.2, 0.6, 0.2}, at::kFloat).view({1, 1, 3, 3});
  auto valid = at::ones({1, 3}, at::kBool);
  auto s = summarise(p, valid, true);
  EXPECT_NEAR(s.span, (0.5 + 0.75) / 2.0, 1e-6);
  EXPECT_EQ(s.queries, 2);
  EXPECT_NEAR(s.excluded_mass, (0.5 + 0.2) / 2.0, 1e-6);
  // Without the CLS choice the same matrix reads differently (all three rows, no renormalisation).
  auto plain = summarise(p, valid, false);
  EXPECT_NEAR(plain.span, (2.0 + (0.5 + 0.25) + (0.4 + 0.6)) / 3.0, 1e-6);

  // Uniform over CLS + 4 tokens: uniform over the 4 tokens once CLS is dropped.
  auto u = summarise(uniform_over_first(2, 2, 5, 5), at::ones({2, 5}, at::kBool), true);
  EXPECT_NEAR(u.span, uniform_span(4), 1e-6);
  EXPECT_NEAR(u.excluded_mass, 1.0 / 5.0, 1e-6);
  // The CLS position is dropped even when the mask calls it padding.
  auto cls_as_padding = at::ones({2, 5}, at::kBool);
  cls_as_padding.select(1, 0).fill_(false);
  auto u2 = summarise(uniform_over_first(2, 2, 5, 5), cls_as_padding, true);
  EXPECT_NEAR(u2.span, uniform_span(4), 1e-6);
}

TEST(Span, ARowWithAllMassOnExcludedKeysIsLeftOutAndCounted) {
  // CLS, t1, t2: t1 attends only to CLS (undefined after renormalising), t2 to t1.
  auto p = at::tensor({1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0}, at::kFloat).view({1, 1, 3, 3});
  auto s = summarise(p, at::ones({1, 3}, at::kBool), true);
  EXPECT_EQ(s.queries, 1);
  EXPECT_EQ(s.massless_queries, 1);
  EXPECT_NEAR(s.span, 1.0, 1e-6);
}

TEST(Span, SequencesAreAveragedNotTokens) {
  // Two sequences of 2 and 4 real tokens in a batch of length 4, uniform attention:
  // spans 0.5 and 1.25; their mean is 0.875 (a mean over all query rows would give 1.0).
  auto p = at::cat({uniform_over_first(1, 1, 4, 2), uniform_over_first(1, 1, 4, 4)}, 0);
  auto valid = at::cat({first_valid(1, 4, 2), first_valid(1, 4, 4)}, 0);
  auto s = summarise(p, valid, false);
  EXPECT_NEAR(s.span, 0.875, 1e-6);
  EXPECT_EQ(s.sequences, 2);
  EXPECT_EQ(s.queries, 6);
}

TEST(Span, LayersHeadsAndBatchesAccumulate) {
  // Layer 0: head 0 identity (0), head 1 uniform (L=4: 1.25). Layer 1: uniform on both heads.
  const int64_t L = 4, B = 5;
  auto identity = at::eye(L).view({1, 1, L, L}).expand({B, 1, L, L});
  auto layer0 = at::cat({identity, uniform_over_first(B, 1, L, L)}, 1).contiguous();
  auto layer1 = uniform_over_first(B, 2, L, L);
  auto valid = first_valid(B, L, L);
  span::Accumulator whole;
  whole.add({span::module_sums(layer0, valid, false), span::module_sums(layer1, valid, false)});
  span::Accumulator split;
  for (auto [first, n] : {std::pair<int64_t, int64_t>{0, 2}, {2, 1}, {3, 2}})
    split.add({span::module_sums(layer0.narrow(0, first, n), valid.narrow(0, first, n), false),
               span::module_sums(layer1.narrow(0, first, n), valid.narrow(0, first, n), false)});
  for (const auto& s : {whole.summary(), split.summary()}) {
    ASSERT_EQ(s.per_head.size(), 2u);
    EXPECT_NEAR(s.per_head[0][0], 0.0, 1e-9);
    EXPECT_NEAR(s.per_head[0][1], 1.25, 1e-6);
    EXPECT_NEAR(s.per_head[1][0], 1.25, 1e-6);
    EXPECT_NEAR(s.per_layer[0], 0.625, 1e-6);
    EXPECT_NEAR(s.per_layer[1], 1.25, 1e-6);
    EXPECT_NEAR(s.span, 3 * 1.25 / 4, 1e-6);
    EXPECT_EQ(s.sequences, B);
    EXPECT_EQ(s.queries, B * 2 * 2 * L);
  }
}

TEST(Span, PairedDocumentsAreSeparateSequences) {
  // Retrieval: [mask; mask2] stacked like the encoder stacks the two towers,
  // each document its own sequence (attention never crosses between them).
  auto m1 = first_valid(2, 6, 3), m2 = first_valid(2, 6, 5);
  auto stacked = span::encoder_mask(m1, m2, false);
  ASSERT_EQ(stacked.sizes(), (at::IntArrayRef{4, 6}));
  EXPECT_TRUE(stacked.narrow(0, 0, 2).equal(m1));
  EXPECT_TRUE(stacked.narrow(0, 2, 2).equal(m2));
  auto p = at::cat({uniform_over_first(2, 2, 6, 3), uniform_over_first(2, 2, 6, 5)}, 0);
  auto s = summarise(p, stacked, false);
  EXPECT_EQ(s.sequences, 4);
  EXPECT_NEAR(s.span, (uniform_span(3) + uniform_span(5)) / 2.0, 1e-6);

  // With a CLS token the mask gains a leading position.
  auto with_cls = span::encoder_mask(m1, at::Tensor(), true);
  ASSERT_EQ(with_cls.sizes(), (at::IntArrayRef{2, 7}));
  EXPECT_TRUE(with_cls.select(1, 0).all().item<bool>());
  EXPECT_TRUE(with_cls.narrow(1, 1, 6).equal(m1));
}

TEST(Span, LowAndHighPrecisionProbabilitiesAgree) {
  auto p = at::softmax(at::randn({2, 2, 9, 9}, at::TensorOptions().dtype(at::kDouble)), -1);
  auto valid = first_valid(2, 9, 7);
  auto d = summarise(p, valid, true);
  auto f = summarise(p.to(at::kFloat), valid, true);
  auto h = summarise(p.to(at::kBFloat16), valid, true);
  EXPECT_NEAR(d.span, f.span, 1e-5);
  EXPECT_NEAR(d.span, h.span, 2e-2);
  EXPECT_GT(d.span, 0.5);
}

TEST(Span, ShapeMismatchesAreRejected) {
  EXPECT_THROW(span::module_sums(at::zeros({2, 2, 4, 5}), first_valid(2, 4, 4), false), lra::Error);
  EXPECT_THROW(span::module_sums(at::zeros({2, 2, 4, 4}), first_valid(2, 5, 4), false), lra::Error);
  span::Accumulator acc;
  acc.add({span::module_sums(at::zeros({1, 2, 4, 4}), first_valid(1, 4, 4), false)});
  EXPECT_THROW(acc.add({span::module_sums(at::zeros({1, 3, 4, 4}), first_valid(1, 4, 4), false)}), lra::Error);
}

// The gradient span (span/gradient_span.h): hand-computed rows.
namespace {

at::Tensor row(std::initializer_list<double> w) { return at::tensor(std::vector<double>(w), at::kDouble).unsqueeze(0); }
at::Tensor all_counted(int64_t L) { return at::ones({1, L}, at::kBool); }
at::Tensor query(int64_t q) { return at::tensor(std::vector<int64_t>{q}, at::kLong); }

}  // namespace

TEST(GradientSpan, OneKeyIsItsDistanceAndRadius) {
  const auto s = span::gradient_sums(row({0, 0, 2.5, 0, 0, 0, 0, 0}), query(5), all_counted(8), 0.9);
  EXPECT_DOUBLE_EQ(s.distance.item<double>(), 3.0);
  EXPECT_DOUBLE_EQ(s.radius.item<double>(), 3.0);
  EXPECT_EQ(s.rows.item<int64_t>(), 1);
  EXPECT_EQ(s.massless.item<int64_t>(), 0);
}

TEST(GradientSpan, TheRadiusCoversTheAskedShareOfTheWeight) {
  // Weight 1 at the query, 1 three to the right, 2 four to the left.
  const auto w = row({0, 2, 0, 0, 0, 1, 0, 0, 1, 0});
  EXPECT_DOUBLE_EQ(span::gradient_sums(w, query(5), all_counted(10), 0.9).distance.item<double>(),
                   (1 * 0 + 1 * 3 + 2 * 4) / 4.0);
  EXPECT_DOUBLE_EQ(span::gradient_sums(w, query(5), all_counted(10), 0.25).radius.item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(span::gradient_sums(w, query(5), all_counted(10), 0.5).radius.item<double>(), 3.0);
  EXPECT_DOUBLE_EQ(span::gradient_sums(w, query(5), all_counted(10), 0.9).radius.item<double>(), 4.0);
  EXPECT_DOUBLE_EQ(span::gradient_sums(w, query(5), all_counted(10), 1.0).radius.item<double>(), 4.0);
}

TEST(GradientSpan, UncountedKeysAndQueriesAreLeftOut) {
  auto counted = all_counted(6);
  counted[0][1] = false;  // e.g. a CLS column or padding
  const auto s = span::gradient_sums(row({0, 100, 0, 1, 0, 0}), query(5), counted, 0.9);
  EXPECT_DOUBLE_EQ(s.distance.item<double>(), 2.0);
  const auto at_padding = span::gradient_sums(row({0, 0, 0, 1, 0, 0}), query(1), counted, 0.9);
  EXPECT_EQ(at_padding.rows.item<int64_t>(), 0);
  EXPECT_EQ(at_padding.massless.item<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(at_padding.distance.item<double>(), 0.0);
  const auto zero = span::gradient_sums(row({0, 5, 0, 0, 0, 0}), query(3), counted, 0.9);
  EXPECT_EQ(zero.rows.item<int64_t>(), 0);
  EXPECT_EQ(zero.massless.item<int64_t>(), 1) << "no weight on any counted key";
}

TEST(GradientSpan, RowsAddAndSequencesAreAveragedNotRows) {
  // Sequence 0: two draws (distances 1 and 3); sequence 1: one row at distance 6.
  const auto counted = at::ones({2, 8}, at::kBool);
  auto w1 = at::zeros({2, 8}, at::kDouble);
  w1[0][1] = 1;  // q = 0 -> distance 1
  w1[1][6] = 1;  // q = 0 -> distance 6
  auto w2 = at::zeros({2, 8}, at::kDouble);
  w2[0][3] = 1;  // q = 0 -> distance 3
  const auto q = at::zeros({2}, at::kLong);
  auto layer = span::gradient_sums(w1, q, counted, 0.9) +
               span::gradient_sums(w2, q, at::stack({counted[0], at::zeros({8}, at::kBool)}), 0.9);
  span::GradientAccumulator acc;
  acc.add({layer});
  const auto s = acc.summary();
  EXPECT_DOUBLE_EQ(s.distance, (2.0 + 6.0) / 2) << "sequence means 2 and 6, not the row mean 10/3";
  EXPECT_EQ(s.rows, 3);
  EXPECT_EQ(s.sequences, 2);
  ASSERT_EQ(s.per_layer_distance.size(), 1u);
  EXPECT_DOUBLE_EQ(s.per_layer_distance[0], 4.0);
}
