// sinkhorn: Sparse Sinkhorn Attention. With one block it must equal the
// reference softmax attention exactly; with a hard (low-temperature) sort each
// query block must read exactly its own block and the block the SortNet picks
// for it (a real sort, not LRA's no-op sum of all blocks); padding must be
// invisible; the SortNet must fit every LRA task's parameter budget.
#include <vector>

#include "lra/attention.h"
#include "mixer_harness.h"

using namespace lra::test;

namespace {

lra::Params opts(int64_t block, int64_t iters = 0, double temperature = 1.0) {
  return {{"block_size", block}, {"sinkhorn_iters", iters}, {"temperature", temperature}};
}

// Softmax attention with the mixer's projections, keys limited to `allowed` [B, H, L, L]
// (a pattern per example and head; the harness's dense_pattern_reference takes one [L, L]).
torch::Tensor restricted_reference(lra::Mixer& m, const torch::Tensor& x, int64_t heads, const torch::Tensor& allowed) {
  auto q = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.q.weight").t()), heads);
  auto k = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.k.weight").t()), heads);
  auto v = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.v.weight").t()), heads);
  auto extra = torch::zeros(allowed.sizes()).masked_fill(allowed.logical_not(), lra::ops::kMaskedLogit);
  auto out = lra::ops::softmax_attention(q, k, v, {}, false, 0.0, false, nullptr, extra);
  return torch::matmul(lra::ops::merge_heads(out), weight(m, "proj.o.weight").t());
}

// SortNet scores [B, H, destination, source] for unpadded x, from the definition:
// source block j's mean key (per head) through the sort_net layer, output i.
torch::Tensor sort_scores(lra::Mixer& m, const torch::Tensor& x, int64_t heads, int64_t block) {
  auto k = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.k.weight").t()), heads);  // [B, H, L, dh]
  const int64_t nb = x.size(1) / block;
  auto summary = k.reshape({k.size(0), heads, nb, block, k.size(3)}).mean(3);
  auto s = torch::matmul(summary, weight(m, "sort_net.weight").t()) + weight(m, "sort_net.bias");
  return s.narrow(-1, 0, nb).transpose(-1, -2);
}

// [B, H, L, L]: a query in block i may read block i and block pick[b, h, i].
torch::Tensor own_plus(const torch::Tensor& pick, int64_t block) {
  const int64_t B = pick.size(0), H = pick.size(1), nb = pick.size(2);
  auto blocks = torch::arange(nb);
  auto own = blocks.view({nb, 1}).eq(blocks.view({1, nb})).view({1, 1, nb, nb});
  auto chosen = pick.unsqueeze(-1).eq(blocks.view({1, 1, 1, nb}));
  auto map = own.logical_or(chosen);  // [B, H, nb, nb]
  return map.view({B, H, nb, 1, nb, 1}).expand({B, H, nb, block, nb, block}).reshape({B, H, nb * block, nb * block});
}

}  // namespace

TEST(Sinkhorn, ShapesFiniteAndGradients) {
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("sinkhorn", small_spec(32, 4, 160), opts(16)), 2, 130, 32));
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("sinkhorn", small_spec(32, 4, 160), opts(16, 5, 0.5)), 2, 130, 32));
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("sinkhorn", small_spec(32, 4, 64)), 2, 40, 32));
}

TEST(Sinkhorn, SortNetworkReceivesGradient) {
  auto m = make_mixer("sinkhorn", small_spec(32, 4, 128), opts(8, 3));
  auto x = random_input(2, 100, 32);
  m->forward(x, lengths_mask(100, {100, 57})).pow(2).sum().backward();
  auto g = weight(*m, "sort_net.weight").grad();
  ASSERT_TRUE(g.defined());
  EXPECT_GT(g.abs().sum().item<double>(), 0.0) << "the sort must influence the output";
}

TEST(Sinkhorn, SingleBlockEqualsTheReference) {
  auto x = random_input(3, 50, 32);
  auto mask = lengths_mask(50, {50, 31, 7});
  torch::NoGradGuard g;
  for (const auto& o : {opts(50), opts(64), opts(64, 4, 0.3)}) {
    auto m = make_mixer("sinkhorn", small_spec(32, 4, 64), o);
    EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, false)), 1e-5);
  }
}

TEST(Sinkhorn, HardSortReadsOwnBlockAndTheChosenBlock) {
  const int64_t block = 8, nb = 8, L = block * nb;
  auto m = make_mixer("sinkhorn", small_spec(32, 4, L), opts(block, 0, 1e-5));
  {
    torch::NoGradGuard g;
    weight(*m, "sort_net.weight").mul_(10);  // spread the scores so the choice is clear-cut
  }
  auto x = random_input(2, L, 32);
  torch::NoGradGuard g;
  auto scores = sort_scores(*m, x, 4, block);
  auto top = scores.topk(2, -1);
  auto gap = (std::get<0>(top).select(-1, 0) - std::get<0>(top).select(-1, 1)).min().item<double>();
  ASSERT_GT(gap, 1e-3) << "scores too close for a hard sort at temperature 1e-5";
  auto pick = std::get<1>(top).select(-1, 0);  // [B, H, nb]
  ASSERT_TRUE(pick.ne(torch::arange(nb).view({1, 1, nb})).any().item<bool>()) << "a non-trivial sort";
  auto y = m->forward(x, lengths_mask(L, {L, L}));
  EXPECT_LT(max_abs_diff(y, restricted_reference(*m, x, 4, own_plus(pick, block))), 1e-4);
}

TEST(Sinkhorn, SinkhornRoundsFollowTheDefinition) {
  // Paper-style settings (7 rounds, temperature 0.75): the output must be, block
  // by block, softmax attention over [own keys ; P·keys] with P the Sinkhorn
  // normalisation (rows over sources last) of the SortNet scores.
  const int64_t block = 8, nb = 6, L = block * nb, iters = 7;
  const double temperature = 0.75;
  auto m = make_mixer("sinkhorn", small_spec(32, 4, L), opts(block, iters, temperature));
  auto x = random_input(2, L, 32, 4);
  torch::NoGradGuard g;
  auto log_p = sort_scores(*m, x, 4, block) / temperature;  // [B, H, dst, src]
  log_p = log_p - log_p.logsumexp(-1, true);
  for (int64_t i = 0; i < iters; ++i) {
    log_p = log_p - log_p.logsumexp(-2, true);
    log_p = log_p - log_p.logsumexp(-1, true);
  }
  auto p = log_p.exp();
  EXPECT_LT((p.sum(-2) - 1).abs().max().item<double>(), 0.05) << "close to doubly stochastic after 7 rounds";

  auto proj = [&](const char* w) { return lra::ops::split_heads(torch::matmul(x, weight(*m, w).t()), 4); };
  auto q = proj("proj.q.weight"), k = proj("proj.k.weight"), v = proj("proj.v.weight");  // [B, H, L, dh]
  auto kb = k.reshape({2, 4, nb, block * 8}), vb = v.reshape({2, 4, nb, block * 8});
  auto sorted_k = torch::matmul(p, kb).view({2, 4, L, 8}), sorted_v = torch::matmul(p, vb).view({2, 4, L, 8});
  std::vector<torch::Tensor> outs;
  for (int64_t i = 0; i < nb; ++i) {
    auto part = [&](const torch::Tensor& t) { return t.narrow(2, i * block, block); };
    auto keys = torch::cat({part(k), part(sorted_k)}, 2), values = torch::cat({part(v), part(sorted_v)}, 2);
    outs.push_back(lra::ops::softmax_attention(part(q), keys, values, {}, false, 0.0, false));
  }
  auto expected = torch::matmul(lra::ops::merge_heads(torch::cat(outs, 2)), weight(*m, "proj.o.weight").t());
  EXPECT_LT(max_abs_diff(m->forward(x, lengths_mask(L, {L, L})), expected), 1e-5);
}

TEST(Sinkhorn, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("sinkhorn", small_spec(32, 4, 64), opts(8)), 60, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer("sinkhorn", small_spec(32, 4, 64), opts(8, 4, 0.5)), 64, 32));
}

TEST(Sinkhorn, PaddedSequenceEqualsTheTruncatedOne) {
  // Padding is honoured exactly: a padded example's real outputs are those of
  // the same example without its padding.
  for (const auto& o : {opts(8), opts(8, 4, 0.5), opts(50)}) {
    auto m = make_mixer("sinkhorn", small_spec(32, 4, 64), o);
    auto x = random_input(1, 64, 32);
    torch::NoGradGuard g;
    auto padded = m->forward(x, lengths_mask(64, {37})).narrow(1, 0, 37);
    auto alone = m->forward(x.narrow(1, 0, 37), lengths_mask(37, {37}));
    EXPECT_LT(max_abs_diff(padded, alone), 1e-5);
  }
}

TEST(Sinkhorn, SortNetworkFitsEveryTaskBudget) {
  struct Task {
    const char* name;
    int64_t d, heads, qkv, max_len, extra_per_layer;  // (1.1·reference - reference) / layers
  };
  const Task tasks[] = {{"listops", 512, 8, 512, 2001, 223718}, {"text (4K + CLS)", 256, 4, 256, 4001, 87168},
                        {"retrieval", 128, 4, 128, 4000, 27190},  {"image", 128, 8, 64, 1025, 24845},
                        {"pathfinder", 32, 4, 16, 1024, 663},    {"path-x", 32, 2, 16, 16384, 53795}};
  for (const auto& t : tasks) {
    for (int64_t block : {50, 64}) {
      lra::MixerSpec s = small_spec(t.d, t.heads, t.max_len);
      s.qkv_dim = t.qkv;
      auto m = make_mixer("sinkhorn", s, opts(block));
      int64_t total = 0;
      for (const auto& p : m->parameters()) total += p.numel();
      EXPECT_LE(total - 4 * t.d * t.qkv, t.extra_per_layer) << t.name << ", block " << block;
    }
  }
}

TEST(Sinkhorn, RefusesCausalMode) {
  EXPECT_FALSE(mixer_capabilities("sinkhorn") & LRA_CAP_CAUSAL);
  EXPECT_THROW(make_mixer("sinkhorn", small_spec(32, 4, 64, true)), lra::Error);
}

TEST(Sinkhorn, AttentionDropoutInTrainingOnly) {
  auto spec = small_spec(32, 4, 128);
  spec.attention_dropout = 0.5;
  auto m = make_mixer("sinkhorn", spec, opts(8, 2));
  auto x = random_input(2, 100, 32);
  auto mask = lengths_mask(100, {100, 60});
  torch::NoGradGuard g;
  EXPECT_EQ(max_abs_diff(m->forward(x, mask), m->forward(x, mask)), 0.0) << "eval: deterministic";
  m->train();
  EXPECT_GT(max_abs_diff(m->forward(x, mask), m->forward(x, mask)), 0.0);
}

// mask_queries (issue 46): LRA's outer-product mask makes a padded query
// average its own block's values (padding included) and its sorted block's,
// each in its own softmax, and add them; here they share one softmax, half
// each. With one block the sorted block holds the real tokens: a padded
// query's output is o((mean of every v + mean of the real v) / 2). With
// several blocks every padded query of a block gets the same output; real
// rows never change.
TEST(Sinkhorn, MaskQueriesGivesLrasUniformRowsToPaddedQueries) {
  torch::NoGradGuard g;
  {
    auto x = random_input(3, 40, 32);
    auto mask = lengths_mask(40, {40, 22, 3});
    auto lra = make_mixer("sinkhorn", small_spec(), {{"block_size", int64_t{40}}, {"mask_queries", true}});
    const auto y = lra->forward(x, mask);
    EXPECT_LT(max_diff_real(y, reference_attention(*lra, x, mask, 4, false), mask), 1e-5);
    auto v = lra::ops::split_heads(torch::matmul(x, weight(*lra, "proj.v.weight").t()), 4);  // [B, H, L, dh]
    auto realf = mask.to(torch::kFloat).view({3, 1, 40, 1});
    auto uniform = 0.5 * (v.mean(2, true) + (v * realf).sum(2, true) / realf.sum(2, true));
    auto expected = torch::matmul(lra::ops::merge_heads(uniform.expand_as(v)), weight(*lra, "proj.o.weight").t());
    const auto padded = mask.logical_not().unsqueeze(-1).expand_as(y);
    EXPECT_LT((y - expected).abs().masked_select(padded).max().item<double>(), 1e-5);
  }
  auto x = random_input(2, 64, 32);
  auto mask = lengths_mask(64, {64, 37});  // example 1: block 2 partly, block 3 wholly padded
  auto plain = make_mixer("sinkhorn", small_spec(), {{"block_size", int64_t{16}}});
  auto lra = make_mixer("sinkhorn", small_spec(), {{"block_size", int64_t{16}}, {"mask_queries", true}});
  const auto y = lra->forward(x, mask);
  EXPECT_TRUE(only_padded_rows_differ(y, plain->forward(x, mask), mask));
  for (const auto& [from, to] : {std::pair<int64_t, int64_t>{37, 48}, {48, 64}}) {
    const auto rows = y[1].narrow(0, from, to - from);
    EXPECT_LT((rows - rows[0]).abs().max().item<double>(), 1e-5) << "block from " << from;
  }
}
