// bigbird: block-sparse attention (sliding band + first/last global blocks +
// random blocks). Where every block is covered it must equal the reference
// softmax attention exactly; elsewhere it must equal softmax attention
// restricted to its own (recorded) sparsity pattern, and that pattern must have
// the BigBird shape.
#include <set>

#include "lra/attention.h"
#include "mixer_harness.h"

using namespace lra::test;

namespace {

lra::Params opts(int64_t block, int64_t rand_blocks = 3) {
  return {{"block_size", block}, {"num_rand_blocks", rand_blocks}};
}

// Softmax attention with the mixer's projections, keys limited to `allowed` [B, H, L, L]
// (a pattern per example and head; the harness's dense_pattern_reference takes one [L, L]).
torch::Tensor restricted_reference(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask, int64_t heads,
                                   const torch::Tensor& allowed) {
  auto q = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.q.weight").t()), heads);
  auto k = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.k.weight").t()), heads);
  auto v = lra::ops::split_heads(torch::matmul(x, weight(m, "proj.v.weight").t()), heads);
  auto extra = torch::zeros(allowed.sizes()).masked_fill(allowed.logical_not(), lra::ops::kMaskedLogit);
  auto out = lra::ops::softmax_attention(q, k, v, mask, false, 0.0, false, nullptr, extra);
  return torch::matmul(lra::ops::merge_heads(out), weight(m, "proj.o.weight").t());
}

// [H, nb, nb] bool: which key blocks each query block of example 0 reads.
torch::Tensor block_map(lra::Mixer& m, int64_t L, int64_t block) {
  m.set_record_attention(true);
  torch::NoGradGuard g;
  m.forward(random_input(1, L, 32), lengths_mask(L, {L}));
  auto p = m.last_attention()[0];  // [H, L, L]
  const int64_t nb = L / block;
  return p.view({p.size(0), nb, block, nb, block}).gt(0).any(4).any(2);
}

}  // namespace

TEST(BigBird, ShapesFiniteAndGradients) {
  auto sparse = make_mixer("bigbird", small_spec(), opts(8));  // 13 blocks, sparse rows
  EXPECT_TRUE(shapes_finite_and_grads(*sparse, 2, 100, 32));
  auto defaults = make_mixer("bigbird", small_spec(32, 4, 256));
  EXPECT_TRUE(shapes_finite_and_grads(*defaults, 2, 200, 32));
}

TEST(BigBird, EqualsTheReferenceWhenEveryBlockIsGlobal) {
  // Default block 64, L 100: two blocks, both global.
  auto m = make_mixer("bigbird", small_spec(32, 4, 128));
  auto x = random_input(3, 100, 32);
  auto mask = lengths_mask(100, {100, 61, 9});
  torch::NoGradGuard g;
  EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, false)), 1e-5);
}

TEST(BigBird, EqualsTheReferenceWhenEveryBlockIsCovered) {
  // Block 16, L 100: 7 blocks; each middle block reads band (3) + global (2) +
  // random (3) = all 7 blocks without counting any twice.
  auto m = make_mixer("bigbird", small_spec(32, 4, 128), opts(16));
  auto x = random_input(3, 100, 32);
  auto mask = lengths_mask(100, {100, 61, 9});
  torch::NoGradGuard g;
  EXPECT_LT(max_abs_diff(m->forward(x, mask), reference_attention(*m, x, mask, 4, false)), 1e-5);
}

TEST(BigBird, SparseRowsEqualSoftmaxOverTheirPattern) {
  // Block 8, L 117: 15 blocks (the last one partly internal padding).
  auto m = make_mixer("bigbird", small_spec(32, 4, 128), opts(8));
  auto x = random_input(3, 117, 32);
  auto mask = lengths_mask(117, {117, 70, 20});
  m->set_record_attention(true);
  torch::NoGradGuard g;
  auto y = m->forward(x, mask);
  auto p = m->last_attention();
  ASSERT_EQ(p.sizes(), torch::IntArrayRef({3, 4, 117, 117}));
  EXPECT_LT(max_diff_real(y, restricted_reference(*m, x, mask, 4, p.gt(0)), mask), 1e-5);
  auto row_sums = p.sum(-1).masked_select(mask.view({3, 1, 117}).expand({3, 4, 117}));
  EXPECT_LT((row_sums - 1).abs().max().item<double>(), 1e-5) << "each real query's weights sum to 1";
}

TEST(BigBird, PatternIsBandPlusGlobalPlusRandom) {
  const int64_t block = 8, nb = 16;
  auto m = make_mixer("bigbird", small_spec(32, 4, 128), opts(block));
  auto map = block_map(*m, nb * block, block);  // [H, nb, nb]
  for (int64_t h = 0; h < 4; ++h) {
    auto mh = map[h];
    EXPECT_TRUE(mh[0].all().item<bool>() && mh[nb - 1].all().item<bool>()) << "global rows read every block";
    EXPECT_TRUE(mh.select(1, 0).all().item<bool>() && mh.select(1, nb - 1).all().item<bool>())
        << "every row reads the global blocks";
    for (int64_t i = 1; i < nb - 1; ++i) {
      EXPECT_TRUE(mh[i][i - 1].item<bool>() && mh[i][i].item<bool>() && mh[i][i + 1].item<bool>()) << "band, row " << i;
      // own + left + right + first + last + 3 random, minus the global block that is also a neighbour.
      const int64_t expected = (i == 1 || i == nb - 2) ? 7 : 8;
      EXPECT_EQ(mh[i].sum().item<int64_t>(), expected) << "head " << h << " row " << i;
    }
  }
  EXPECT_FALSE(map[0].equal(map[1])) << "random blocks differ per head";
}

TEST(BigBird, RandomBlocksAreFixedPerLayerAndSeed) {
  auto spec = small_spec(32, 4, 128);
  auto a = block_map(*make_mixer("bigbird", spec, opts(8)), 128, 8);
  auto again = block_map(*make_mixer("bigbird", spec, opts(8), /*torch seed=*/7), 128, 8);
  EXPECT_TRUE(a.equal(again)) << "same layer and seed give the same pattern";
  auto other_layer = spec;
  other_layer.layer_index = 1;
  EXPECT_FALSE(a.equal(block_map(*make_mixer("bigbird", other_layer, opts(8)), 128, 8)));
  auto other_seed = spec;
  other_seed.seed = 12345;
  EXPECT_FALSE(a.equal(block_map(*make_mixer("bigbird", other_seed, opts(8)), 128, 8)));
}

TEST(BigBird, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("bigbird", small_spec(32, 4, 128), opts(8)), 96, 32));
  EXPECT_TRUE(padding_invariant(*make_mixer("bigbird", small_spec(32, 4, 128), opts(8, 1)), 100, 32));
}

TEST(BigBird, PaddedKeysGetNoWeight) {
  auto m = make_mixer("bigbird", small_spec(32, 4, 128), opts(8));
  m->set_record_attention(true);
  torch::NoGradGuard g;
  m->forward(random_input(2, 100, 32), lengths_mask(100, {100, 41}));
  auto p = m->last_attention();
  EXPECT_EQ(p[1].narrow(-1, 41, 59).abs().max().item<double>(), 0.0);
}

TEST(BigBird, NoParametersBeyondTheProjections) {
  auto m = make_mixer("bigbird", small_spec());
  std::set<std::string> names;
  for (const auto& p : m->named_parameters()) names.insert(p.key());
  EXPECT_EQ(names, (std::set<std::string>{"proj.q.weight", "proj.k.weight", "proj.v.weight", "proj.o.weight"}));
}

TEST(BigBird, RefusesCausalMode) {
  EXPECT_FALSE(mixer_capabilities("bigbird") & LRA_CAP_CAUSAL);
  EXPECT_THROW(make_mixer("bigbird", small_spec(32, 4, 64, true)), lra::Error);
}

TEST(BigBird, AttentionDropoutInTrainingOnly) {
  auto spec = small_spec(32, 4, 128);
  spec.attention_dropout = 0.5;
  auto m = make_mixer("bigbird", spec, opts(8));  // global and sparse rows
  auto x = random_input(2, 100, 32);
  auto mask = lengths_mask(100, {100, 60});
  torch::NoGradGuard g;
  EXPECT_EQ(max_abs_diff(m->forward(x, mask), m->forward(x, mask)), 0.0) << "eval: deterministic";
  m->train();
  auto a = m->forward(x, mask), b = m->forward(x, mask);
  EXPECT_GT(max_abs_diff(a.narrow(1, 0, 8), b.narrow(1, 0, 8)), 0.0) << "global rows";
  EXPECT_GT(max_abs_diff(a.narrow(1, 40, 8), b.narrow(1, 40, 8)), 0.0) << "sparse rows";
}

// mask_queries (issue 46): LRA's BigBird multiplies the attention output by
// the query mask (bigbird_attention.py:312), so a padded query's output is
// zero (there is no output bias); real rows are unchanged.
TEST(BigBird, MaskQueriesZeroesPaddedQueriesLikeLra) {
  auto x = random_input(3, 200, 32);  // 4 blocks of 50, partly padded
  auto mask = lengths_mask(200, {200, 120, 30});
  torch::NoGradGuard g;
  auto options = opts(50, 1);
  auto plain = make_mixer("bigbird", small_spec(32, 4, 256), options);
  options["mask_queries"] = true;
  auto lra = make_mixer("bigbird", small_spec(32, 4, 256), options);
  const auto y = lra->forward(x, mask), y_plain = plain->forward(x, mask);
  EXPECT_LT(max_diff_real(y, y_plain, mask), 1e-6);
  const auto padded = mask.logical_not().unsqueeze(-1).expand_as(y);
  EXPECT_EQ(y.masked_select(padded).abs().max().item<double>(), 0.0);
  EXPECT_GT(y_plain.masked_select(padded).abs().max().item<double>(), 1e-3);
}
