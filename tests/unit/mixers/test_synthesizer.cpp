// synthesizer: synthetic (input-independent) attention logits, optionally added
// to the dot-product logits.
#include <cmath>

#include <lra/attention.h>

#include "mixer_harness.h"

using namespace lra::test;

namespace {

const std::string kModes[] = {"random", "factorized_random", "fixed_random"};

lra::Params mode(const std::string& m, bool dot_product = true) {
  return {{"mode", m}, {"dot_product", dot_product}};
}

torch::Tensor param_named(lra::Mixer& m, const std::string& name) {
  for (const auto& p : m.named_parameters())
    if (p.key() == name) return p.value();
  throw std::runtime_error("no parameter '" + name + "'");
}

void zero_param(lra::Mixer& m, const std::string& name) {
  torch::NoGradGuard g;
  param_named(m, name).zero_();
}

int64_t parameter_count(lra::Mixer& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

// q·k/sqrt(dh) logits [B, H, L, L] from the mixer's own projections.
torch::Tensor dot_logits(lra::Mixer& m, const torch::Tensor& x, int64_t heads) {
  auto q = lra::ops::split_heads(torch::matmul(x, param_named(m, "proj.q.weight").t()), heads);
  auto k = lra::ops::split_heads(torch::matmul(x, param_named(m, "proj.k.weight").t()), heads);
  return torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
}

}  // namespace

TEST(Synthesizer, ShapesFiniteAndGradients) {
  for (const auto& md : kModes)
    for (bool dot : {true, false}) {
      auto m = make_mixer("synthesizer", small_spec(), mode(md, dot));
      EXPECT_TRUE(shapes_finite_and_grads(*m, 2, 40, 32)) << md << " dot_product " << dot;
    }
}

TEST(Synthesizer, LearnedTablesReceiveGradient) {
  const std::pair<std::string, std::vector<std::string>> cases[] = {{"random", {"R"}},
                                                                    {"factorized_random", {"R1", "R2"}}};
  for (const auto& [md, names] : cases) {
    auto m = make_mixer("synthesizer", small_spec(), mode(md));
    m->forward(random_input(2, 40, 32), lengths_mask(40, {40, 30})).pow(2).sum().backward();
    for (const auto& n : names) {
      auto g = param_named(*m, n).grad();
      ASSERT_TRUE(g.defined()) << n;
      EXPECT_GT(g.abs().sum().item<double>(), 0.0) << n;
    }
  }
  // Rows and columns past the input length take no part.
  auto m = make_mixer("synthesizer", small_spec(32, 4, 64), mode("random"));
  m->forward(random_input(1, 40, 32), lengths_mask(40, {40})).sum().backward();
  auto g = param_named(*m, "R").grad();
  EXPECT_EQ(g.narrow(1, 40, 24).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(g.narrow(2, 40, 24).abs().sum().item<double>(), 0.0);
}

// Zero synthetic logits + dot product = plain softmax attention, padding included.
TEST(Synthesizer, ZeroSyntheticLogitsEqualSoftmaxAttention) {
  auto x = random_input(3, 50, 32);
  auto mask = lengths_mask(50, {50, 31, 7});
  auto random = make_mixer("synthesizer", small_spec(), mode("random"));
  zero_param(*random, "R");
  auto factorized = make_mixer("synthesizer", small_spec(), mode("factorized_random"));
  zero_param(*factorized, "R1");
  torch::NoGradGuard g;
  for (auto* m : {random.get(), factorized.get()})
    EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, false)), 1e-6);
}

// Without the dot product and with a zero table every real key gets the same
// weight: the output is the (projected) mean of the real values.
TEST(Synthesizer, ZeroTableWithoutDotProductAveragesRealValues) {
  auto m = make_mixer("synthesizer", small_spec(), mode("random", false));
  zero_param(*m, "R");
  auto x = random_input(2, 30, 32);
  auto mask = lengths_mask(30, {30, 12});
  torch::NoGradGuard g;
  auto y = m->forward(x, mask);
  auto v = torch::matmul(x, param_named(*m, "proj.v.weight").t());
  auto w = mask.to(torch::kFloat).unsqueeze(-1);
  auto mean = (v * w).sum(1, true) / w.sum(1, true);
  auto expected = torch::matmul(mean, param_named(*m, "proj.o.weight").t()).expand_as(y);
  EXPECT_LT(max_abs_diff(y, expected), 1e-5);
}

// fixed_random: log p - dot logits = table - (a per-row constant), the same for every input.
TEST(Synthesizer, FixedTableIsInputIndependentAndNonZero) {
  auto m = make_mixer("synthesizer", small_spec(), mode("fixed_random"));
  m->set_record_attention(true);
  auto mask = lengths_mask(24, {24});
  torch::NoGradGuard g;
  auto synthetic = [&](uint64_t seed) {
    auto x = random_input(1, 24, 32, seed);
    m->forward(x, mask);
    auto s = m->last_attention().log() - dot_logits(*m, x, 4);
    return s - s.mean(-1, true);  // remove the per-row log-normaliser
  };
  auto a = synthetic(5), b = synthetic(6);
  EXPECT_LT(max_abs_diff(a, b), 1e-4);
  EXPECT_GT(a.abs().max().item<double>(), 1e-3) << "the fixed table is zero";
}

TEST(Synthesizer, FixedTableDependsOnSeedAndLayerOnly) {
  auto spec = small_spec();
  auto x = random_input(2, 40, 32);
  auto mask = lengths_mask(40, {40, 20});
  auto a = make_mixer("synthesizer", spec, mode("fixed_random"));
  auto b = make_mixer("synthesizer", spec, mode("fixed_random"));
  spec.layer_index = 1;
  auto c = make_mixer("synthesizer", spec, mode("fixed_random"));  // same projections, other table
  torch::NoGradGuard g;
  auto ya = a->forward(x, mask);
  EXPECT_EQ(max_abs_diff(ya, b->forward(x, mask)), 0.0);
  EXPECT_GT(max_abs_diff(ya, c->forward(x, mask)), 1e-6);
}

TEST(Synthesizer, PaddingInvariant) {
  for (const auto& md : kModes)
    for (bool dot : {true, false})
      EXPECT_TRUE(padding_invariant(*make_mixer("synthesizer", small_spec(), mode(md, dot)), 48, 32))
          << md << " dot_product " << dot;
}

TEST(Synthesizer, PaddedRowEqualsTheRowAlone) {
  const int64_t L = 60;
  const std::vector<int64_t> lengths = {60, 33, 9};
  auto x = random_input(3, L, 32);
  for (const auto& md : kModes) {
    auto m = make_mixer("synthesizer", small_spec(), mode(md));
    torch::NoGradGuard g;
    auto padded = m->forward(x, lengths_mask(L, lengths));
    for (size_t b = 0; b < lengths.size(); ++b) {
      const int64_t n = lengths[b];
      auto alone = m->forward(x[b].narrow(0, 0, n).unsqueeze(0), lengths_mask(n, {n}));
      EXPECT_LT(max_abs_diff(padded[b].narrow(0, 0, n), alone[0]), 1e-5) << md << " row " << b;
    }
  }
}

TEST(Synthesizer, CausalModeReadsNoFuture) {
  ASSERT_TRUE(mixer_capabilities("synthesizer") & LRA_CAP_CAUSAL);
  for (const auto& md : kModes)
    for (bool dot : {true, false})
      EXPECT_TRUE(no_future_leak(*make_mixer("synthesizer", small_spec(32, 4, 64, true), mode(md, dot)), 40, 32))
          << md << " dot_product " << dot;
  auto m = make_mixer("synthesizer", small_spec(32, 4, 64, true), mode("random"));
  zero_param(*m, "R");
  auto x = random_input(2, 40, 32);
  auto mask = lengths_mask(40, {40, 40});
  torch::NoGradGuard g;
  EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, true)), 1e-6);
}

TEST(Synthesizer, RecordsAttentionProbabilities) {
  for (bool dot : {true, false}) {
    auto m = make_mixer("synthesizer", small_spec(), mode("fixed_random", dot));
    m->set_record_attention(true);
    torch::NoGradGuard g;
    m->forward(random_input(2, 20, 32), lengths_mask(20, {20, 10}));
    auto p = m->last_attention();
    ASSERT_TRUE(p.defined());
    EXPECT_EQ(p.sizes(), torch::IntArrayRef({2, 4, 20, 20}));
    EXPECT_LT(max_abs_diff(p.sum(-1), torch::ones({2, 4, 20})), 1e-5);
    EXPECT_LT(p[1].narrow(-1, 10, 10).abs().max().item<double>(), 1e-6) << "padded keys must get no weight";
  }
}

TEST(Synthesizer, ParameterCountPerMode) {
  const auto spec = small_spec(32, 4, 64);
  const int64_t qkvo = 4 * 32 * 32;
  EXPECT_EQ(parameter_count(*make_mixer("synthesizer", spec, mode("fixed_random"))), qkvo);
  EXPECT_EQ(parameter_count(*make_mixer("synthesizer", spec, mode("random"))), qkvo + 4 * 64 * 64);
  EXPECT_EQ(parameter_count(*make_mixer("synthesizer", spec, mode("factorized_random"))), qkvo + 2 * 4 * 64 * 32);
  auto small_k = mode("factorized_random");
  small_k["k"] = int64_t{3};
  EXPECT_EQ(parameter_count(*make_mixer("synthesizer", spec, small_k)), qkvo + 2 * 4 * 64 * 3);
}

TEST(Synthesizer, AttentionDropoutOnlyInTraining) {
  auto spec = small_spec();
  spec.attention_dropout = 0.5;
  auto m = make_mixer("synthesizer", spec);
  auto x = random_input(2, 40, 32);
  auto mask = lengths_mask(40, {40, 40});
  torch::NoGradGuard g;
  EXPECT_EQ(max_abs_diff(m->forward(x, mask), m->forward(x, mask)), 0.0);
  m->train();
  EXPECT_GT(max_abs_diff(m->forward(x, mask), m->forward(x, mask)), 1e-4);
}

TEST(Synthesizer, RejectsBadOptionsAndLongInputs) {
  EXPECT_THROW(make_mixer("synthesizer", small_spec(), {{"mode", std::string("dense")}}), lra::Error);
  EXPECT_THROW(make_mixer("synthesizer", small_spec(), {{"k", int64_t{0}}}), lra::Error);
  auto m = make_mixer("synthesizer", small_spec(32, 4, 64));
  torch::NoGradGuard g;
  EXPECT_ANY_THROW(m->forward(random_input(1, 65, 32), lengths_mask(65, {65})));
}

// mask_queries (issue 46): LRA adds the outer-product mask's -1e10 to the
// synthetic and dot-product logits, so a padded query's row is uniform over
// every key; real rows are unchanged.
TEST(Synthesizer, MaskQueriesGivesLrasUniformRowsToPaddedQueries) {
  auto x = random_input(3, 30, 32);
  auto mask = lengths_mask(30, {30, 17, 4});
  const auto all = torch::ones({30, 30}, torch::kBool);
  torch::NoGradGuard g;
  auto options = mode("random");
  auto plain = make_mixer("synthesizer", small_spec(), options);
  options["mask_queries"] = true;
  auto lra = make_mixer("synthesizer", small_spec(), options);
  const auto table = param_named(*lra, "R").narrow(1, 0, 30).narrow(2, 0, 30).unsqueeze(0);  // [1, H, L, L]
  const auto y = lra->forward(x, mask);
  EXPECT_LT(max_abs_diff(y, lra_masked_reference(*lra, x, mask, all, all, 4, table)), 1e-5);
  EXPECT_TRUE(only_padded_rows_differ(y, plain->forward(x, mask), mask));
}
