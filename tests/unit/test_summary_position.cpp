// rules/summary_position.h and model/summary_probe.h: the host's probe tells
// mixers that read ahead from mixers that do not; a classifier whose mixer
// does not read ahead reads its summary after each example's last real
// token, so the head sees the whole example, while bidirectional mixers keep
// LRA's position 0 (docs/rules.md#causal-mixers-and-the-summary-token).
#include <gtest/gtest.h>

#include <torch/utils.h>
#include <torch/types.h>

#include "model/backbone.h"
#include "model/summary_probe.h"

using namespace lra::host;

namespace {

ModelConfig small(const std::string& pooling) {
  ModelConfig m{};
  m.layers = 2;
  m.d_model = 16;
  m.heads = 2;
  m.qkv_dim = 16;
  m.ffn_dim = 32;
  m.dropout = 0.0;
  m.attention_dropout = 0.0;
  m.pooling = pooling;
  m.positions = "sinusoidal";
  m.max_len = 12;
  return m;
}

// The host's softmax attention, bidirectional or causal whatever the host asks.
MixerFactory attention(bool causal) {
  return [causal](lra::MixerSpec s) {
    s.causal = causal;
    return make_reference_attention(s);
  };
}

BackboneSpec spec_of(const std::string& pooling, SummaryPosition summary = SummaryPosition::first) {
  BackboneSpec s{small(pooling), 20, 3, 0, false};
  s.summary = summary;
  return s;
}

bool is_output(const std::string& name) {
  const std::string tail = ".o.weight";
  return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
}

torch::Tensor real_prefix(int64_t batch, int64_t length, int64_t real) {
  auto m = torch::zeros({batch, length}, torch::kBool);
  m.narrow(1, 0, real).fill_(true);
  return m;
}

}  // namespace

TEST(SummaryPosition, NamesRoundTripAndFitTheirPooling) {
  for (const auto p : {SummaryPosition::first, SummaryPosition::after_last, SummaryPosition::mean})
    EXPECT_EQ(summary_position_from_name(summary_position_name(p)), p);
  EXPECT_FALSE(summary_position_from_name("last"));
  EXPECT_TRUE(summary_fits_pooling(SummaryPosition::after_last, "cls"));
  EXPECT_TRUE(summary_fits_pooling(SummaryPosition::first, "first"));
  EXPECT_TRUE(summary_fits_pooling(SummaryPosition::mean, "mean_padded"));
  EXPECT_FALSE(summary_fits_pooling(SummaryPosition::after_last, "mean"));
  EXPECT_FALSE(summary_fits_pooling(SummaryPosition::mean, "cls"));
  EXPECT_EQ(lra_summary_position("cls"), SummaryPosition::first);
  EXPECT_EQ(lra_summary_position("mean"), SummaryPosition::mean);
}

TEST(SummaryProbe, BidirectionalAttentionReadsAheadAndCausalAttentionDoesNot) {
  for (const std::string pooling : {"cls", "first"}) {
    SCOPED_TRACE(pooling);
    EXPECT_TRUE(mixer_reads_ahead(attention(false), spec_of(pooling)));
    EXPECT_FALSE(mixer_reads_ahead(attention(true), spec_of(pooling)));
    EXPECT_EQ(choose_summary_position(attention(false), spec_of(pooling)), SummaryPosition::first);
    EXPECT_EQ(choose_summary_position(attention(true), spec_of(pooling)), SummaryPosition::after_last);
  }
  // Mean pooling reads every position: no probe (a mixer is never built).
  int built = 0;
  const MixerFactory counting = [&](const lra::MixerSpec& s) {
    ++built;
    return make_reference_attention(s);
  };
  EXPECT_EQ(choose_summary_position(counting, spec_of("mean")), SummaryPosition::mean);
  EXPECT_EQ(built, 0);
}

// A mixer whose output projection starts at zero outputs zeros everywhere;
// the probe gives such tensors small values first, so it still sees where
// the mixer reads.
TEST(SummaryProbe, AZeroInitialisedOutputProjectionDoesNotHideReadingAhead) {
  const MixerFactory zero_output = [](const lra::MixerSpec& s) {
    auto m = make_reference_attention(s);
    torch::NoGradGuard g;
    for (auto& p : m->named_parameters())
      if (is_output(p.key())) p.value().zero_();
    return m;
  };
  {
    torch::NoGradGuard g;
    auto m = zero_output(mixer_spec(small("cls"), 13, 0, 0));
    bool zeroed = false;
    for (auto& p : m->named_parameters()) zeroed |= is_output(p.key()) && p.value().eq(0).all().item<bool>();
    ASSERT_TRUE(zeroed) << "the reference attention has an output projection *o.weight";
  }
  EXPECT_TRUE(mixer_reads_ahead(zero_output, spec_of("cls")));
}

TEST(SummaryProbe, LeavesTheGlobalRandomStreamAlone) {
  torch::manual_seed(5);
  const auto expected = torch::rand({8});
  torch::manual_seed(5);
  (void)mixer_reads_ahead(attention(false), spec_of("cls"));
  EXPECT_TRUE(torch::equal(torch::rand({8}), expected));
}

// The failure the rule exists for: a causal mixer under LRA's CLS at position
// 0 gives the head a constant; after the last real token the head reads the
// example, and what follows the example (padding) still does not matter.
TEST(SummaryPosition, ACausalMixersHeadReadsTheWholeExampleOnlyAfterItsLastToken) {
  torch::manual_seed(1);
  Classifier first(spec_of("cls", SummaryPosition::first), attention(true));
  torch::manual_seed(1);
  Classifier after(spec_of("cls", SummaryPosition::after_last), attention(true));
  first->eval();
  after->eval();
  torch::NoGradGuard g;
  auto ids = torch::randint(1, 20, {1, 10}, torch::kLong);
  const auto mask = real_prefix(1, 10, 7);
  auto other = ids.clone();
  other.narrow(1, 0, 7).copy_(torch::randint(1, 20, {1, 7}, torch::kLong));
  EXPECT_TRUE(torch::allclose(first->forward(ids, mask), first->forward(other, mask), 1e-6, 1e-6))
      << "CLS at position 0 under a causal mixer reads nothing";
  EXPECT_FALSE(torch::allclose(after->forward(ids, mask), after->forward(other, mask), 1e-4, 1e-4));
  // Only the last real token changed: the summary after it still sees it.
  auto last = ids.clone();
  last[0][6] = (ids[0][6].item<int64_t>() % 19) + 1;
  EXPECT_FALSE(torch::allclose(after->forward(ids, mask), after->forward(last, mask), 1e-4, 1e-4));
  // Padding after the example: other ids, or none at all, give the same logits.
  auto padded = ids.clone();
  padded.narrow(1, 7, 3).fill_(3);
  EXPECT_TRUE(torch::allclose(after->forward(ids, mask), after->forward(padded, mask), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(after->forward(ids, mask),
                              after->forward(ids.narrow(1, 0, 7).contiguous(), real_prefix(1, 7, 7)), 1e-5, 1e-5));
  // Examples of different lengths in one batch each read their own position.
  auto batch = torch::cat({ids, ids}, 0);
  auto masks = torch::cat({mask, real_prefix(1, 10, 10)}, 0);
  const auto both = after->forward(batch, masks);
  EXPECT_TRUE(torch::allclose(both[0], after->forward(ids, mask)[0], 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(both[1], after->forward(ids, real_prefix(1, 10, 10))[0], 1e-5, 1e-5));
}

// First-token pooling (Retrieval's towers) reads the last real token instead.
TEST(SummaryPosition, FirstTokenPoolingReadsTheLastRealToken) {
  torch::manual_seed(2);
  Classifier after(spec_of("first", SummaryPosition::after_last), attention(true));
  after->eval();
  torch::NoGradGuard g;
  auto ids = torch::randint(1, 20, {1, 10}, torch::kLong);
  const auto mask = real_prefix(1, 10, 6);
  auto last = ids.clone();
  last[0][5] = (ids[0][5].item<int64_t>() % 19) + 1;
  EXPECT_FALSE(torch::allclose(after->forward(ids, mask), after->forward(last, mask), 1e-4, 1e-4));
  auto beyond = ids.clone();
  beyond[0][6] = (ids[0][6].item<int64_t>() % 19) + 1;
  EXPECT_TRUE(torch::allclose(after->forward(ids, mask), after->forward(beyond, mask), 1e-5, 1e-5));
}

// A mixer that reads ahead keeps LRA's model exactly: the summary field is
// not consulted for it, and its parameters are the same either way.
TEST(SummaryPosition, AfterLastAddsNoParameters) {
  EXPECT_EQ(count_parameters(*Classifier(spec_of("cls", SummaryPosition::after_last), attention(true))),
            count_parameters(*Classifier(spec_of("cls", SummaryPosition::first), attention(true))));
}
