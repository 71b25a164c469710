// reformer: LSH attention. The parity tests rebuild the attention densely (an L x L
// pass written independently of the plugin's sorted/chunked code) with shared QK,
// self-exclusion and exactly the (query, key) pairs the hashing allows.
#include <cmath>

#include "lra/attention.h"
#include "mixer_harness.h"

using namespace lra::test;

namespace {

constexpr int64_t D = 32, H = 4;

torch::Tensor named(lra::Mixer& m, const std::string& name) {
  for (const auto& p : m.named_parameters())
    if (p.key() == name) return p.value();
  for (const auto& b : m.named_buffers())
    if (b.key() == name) return b.value();
  throw std::runtime_error("reformer mixer has no tensor '" + name + "'");
}

lra::MixerSpec spec(bool causal = false, int64_t max_len = 256) { return small_spec(D, H, max_len, causal); }

// What the hashing of one configuration allows, rebuilt from the paper's definitions.
struct Lsh {
  int64_t chunk = 64, n_buckets = 1, n_hashes = 1;
  bool across = false, causal = false;
};

lra::Params params(const Lsh& c) {
  return {{"chunk_len", c.chunk}, {"n_buckets", c.n_buckets}, {"n_hashes", c.n_hashes},
          {"attend_across_buckets", c.across}};
}

torch::Tensor shared_qk(lra::Mixer& m, const torch::Tensor& x) {
  return lra::ops::split_heads(torch::linear(x, named(m, "proj.q.weight")), H);  // [B, H, L, dh]
}

// Buckets [B, H, R, L]: argmax([xR, -xR]) with the mixer's rotations; masked tokens get n_buckets.
torch::Tensor buckets(lra::Mixer& m, const torch::Tensor& q, const torch::Tensor& mask, const Lsh& c) {
  const auto B = q.size(0), L = q.size(2);
  torch::Tensor ids;
  if (c.n_buckets == 1) {
    ids = torch::zeros({B, H, c.n_hashes, L}, torch::kLong);
  } else {
    auto rot = named(m, "rotations").narrow(-1, 0, c.n_buckets / 2);  // [H, R, dh, nb/2]
    auto r = torch::matmul(q.unsqueeze(2), rot.unsqueeze(0));
    ids = torch::cat({r, -r}, -1).argmax(-1);
  }
  return ids.masked_fill(mask.logical_not().view({B, 1, 1, L}), c.n_buckets);
}

// [B, H, L, L]: key j may serve query i in at least one round.
torch::Tensor lsh_pairs(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask, const Lsh& c) {
  const auto L = x.size(1);
  auto b = buckets(m, shared_qk(m, x), mask, c);
  auto pos = torch::arange(L);
  auto allowed = torch::zeros({x.size(0), H, L, L}, torch::kBool);
  for (int64_t r = 0; r < c.n_hashes; ++r) {
    auto br = b.select(2, r);                                                  // [B, H, L]
    auto key = br * L + pos;                                                   // sort key (bucket, position)
    auto rank = key.unsqueeze(-2).lt(key.unsqueeze(-1)).sum(-1);               // sorted index of each position
    auto ri = rank.unsqueeze(-1), rj = rank.unsqueeze(-2);
    torch::Tensor near;
    if (c.causal) {
      near = (ri - rj).ge(0) & (ri - rj).le(c.chunk);
    } else {
      auto ci = torch::div(ri, c.chunk, "trunc"), cj = torch::div(rj, c.chunk, "trunc");
      near = cj.eq(ci) | cj.eq(ci - 1);
    }
    if (!c.across) near = near & br.unsqueeze(-1).eq(br.unsqueeze(-2));
    allowed = allowed | near;
  }
  allowed = allowed & mask.view({x.size(0), 1, 1, L});
  if (c.causal) allowed = allowed & torch::ones({L, L}, torch::kBool).tril();
  return allowed;
}

// Full shared-QK softmax attention restricted to `allowed` [B, H, L, L]: keys are the
// normalised queries, logits / sqrt(dh), own key only when nothing else is allowed.
torch::Tensor dense_reference(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& allowed) {
  auto q = shared_qk(m, x);
  auto k = q * torch::rsqrt(q.pow(2).sum(-1, true) + 1e-6);
  auto v = lra::ops::split_heads(torch::linear(x, named(m, "proj.v.weight")), H);
  auto logits = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  logits = logits.masked_fill(torch::eye(x.size(1), torch::kBool), -1e5);
  logits = logits.masked_fill(allowed.logical_not(), lra::ops::kMaskedLogit);
  auto out = torch::matmul(torch::softmax(logits, -1), v);
  return torch::linear(lra::ops::merge_heads(out), named(m, "proj.o.weight"));
}

// Largest difference at real (unpadded) positions.
double real_diff(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& mask) {
  return (a - b).abs().masked_select(mask.unsqueeze(-1).expand_as(a)).max().item<double>();
}

// The plugin against the dense reference on the LSH pairs of configuration c.
double lsh_parity(const Lsh& c, int64_t L, const std::vector<int64_t>& lengths) {
  auto m = make_mixer("reformer", spec(c.causal), params(c));
  auto x = random_input(static_cast<int64_t>(lengths.size()), L, D, 5);
  auto mask = lengths_mask(L, lengths);
  torch::NoGradGuard g;
  return real_diff(m->forward(x, mask), dense_reference(*m, x, lsh_pairs(*m, x, mask, c)), mask);
}

}  // namespace

TEST(Reformer, DeclaresCausalAndPaddingNotAttentionProbs) {
  const auto caps = mixer_capabilities("reformer");
  EXPECT_TRUE(caps & LRA_CAP_CAUSAL);
  EXPECT_TRUE(caps & LRA_CAP_PADDING_MASK);
  EXPECT_FALSE(caps & LRA_CAP_ATTENTION_PROBS);
}

TEST(Reformer, ShapesFiniteAndGradients) {
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("reformer", spec()), 2, 40, D));
  Lsh multi{8, 4, 3};
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("reformer", spec(), params(multi)), 2, 45, D));
  EXPECT_TRUE(shapes_finite_and_grads(*make_mixer("reformer", spec(true), params(multi)), 2, 45, D));
}

TEST(Reformer, SharedQkHasThreeProjectionsAndNoTrainableRotations) {
  auto m = make_mixer("reformer", spec());
  int64_t n = 0;
  for (const auto& p : m->parameters()) n += p.numel();
  EXPECT_EQ(n, 3 * D * D);  // Q(=K), V, O
  EXPECT_FALSE(named(*m, "rotations").requires_grad());
}

TEST(Reformer, OneBucketOneChunkIsExactSharedQkAttention) {
  const int64_t L = 50;
  auto x = random_input(3, L, D);
  auto mask = lengths_mask(L, {50, 31, 7});
  auto full = mask.view({3, 1, 1, L}).expand({3, H, L, L});
  for (int64_t hashes : {1, 3}) {
    auto m = make_mixer("reformer", spec(), params({64, 1, hashes}));
    torch::NoGradGuard g;
    EXPECT_LT(real_diff(m->forward(x, mask), dense_reference(*m, x, full), mask), 1e-5) << hashes << " hashes";
  }
}

TEST(Reformer, OneBucketOneChunkCausalIsExactCausalAttention) {
  const int64_t L = 50;
  auto m = make_mixer("reformer", spec(true), params({64, 1, 2, false, true}));
  auto x = random_input(2, L, D);
  auto mask = lengths_mask(L, {L, L});
  auto causal = torch::ones({L, L}, torch::kBool).tril().expand({2, H, L, L});
  torch::NoGradGuard g;
  EXPECT_LT(max_abs_diff(m->forward(x, mask), dense_reference(*m, x, causal)), 1e-5);
}

TEST(Reformer, QueryAttendsToItselfOnlyWhenAlone) {
  auto m = make_mixer("reformer", spec(), params({64, 1, 1}));
  auto x = random_input(2, 10, D);
  auto mask = lengths_mask(10, {2, 1});
  auto value_out = [&](int64_t b, int64_t t) {  // O(V x[b, t]): all weight on key t
    return torch::linear(torch::linear(x[b][t], named(*m, "proj.v.weight")), named(*m, "proj.o.weight"));
  };
  torch::NoGradGuard g;
  auto y = m->forward(x, mask);
  EXPECT_LT(max_abs_diff(y[0][0], value_out(0, 1)), 1e-5) << "the only other key takes all the weight";
  EXPECT_LT(max_abs_diff(y[0][1], value_out(0, 0)), 1e-5);
  EXPECT_LT(max_abs_diff(y[1][0], value_out(1, 0)), 1e-5) << "a lone token attends to itself";
}

TEST(Reformer, SeveralBucketsAttendExactlyToTheLshPairs) {
  // Sequence lengths not multiples of the chunk; one and several rounds; padding.
  EXPECT_LT(lsh_parity({8, 4, 1}, 45, {45, 30, 9}), 1e-5);
  EXPECT_LT(lsh_parity({8, 6, 3}, 45, {45, 30, 9}), 1e-5);
  EXPECT_LT(lsh_parity({5, 2, 2, /*across=*/true}, 37, {37, 20}), 1e-5);
}

TEST(Reformer, CausalSeveralBucketsAttendExactlyToTheLshPairs) {
  EXPECT_LT(lsh_parity({8, 4, 1, false, true}, 45, {45, 45}), 1e-5);
  EXPECT_LT(lsh_parity({8, 6, 3, false, true}, 45, {45, 45}), 1e-5);
}

TEST(Reformer, DerivedBucketCountIsTwicePerChunk) {
  // Defaults: chunk 64, n_buckets 0 -> 2 * ceil(200 / 64) = 8 buckets.
  auto m = make_mixer("reformer", spec());
  EXPECT_EQ(named(*m, "rotations").sizes(), torch::IntArrayRef({H, 1, D / H, 4}));  // ceil(256 / 64) columns
  auto x = random_input(2, 200, D);
  auto mask = lengths_mask(200, {200, 150});
  auto pairs = lsh_pairs(*m, x, mask, {64, 8, 1});
  EXPECT_LT(pairs.to(torch::kFloat).mean().item<double>(), 0.5) << "several buckets should prune most pairs";
  torch::NoGradGuard g;
  EXPECT_LT(real_diff(m->forward(x, mask), dense_reference(*m, x, pairs), mask), 1e-5);
}

// LRA's geometry (reference settings): 10 chunks of floor(L / 10) + 1 sorted positions at
// any length, n_buckets 10, other-bucket keys in the window attended.
TEST(Reformer, FixedChunkCountIsLrasGeometry) {
  for (const int64_t L : {65, 40, 120}) {
    SCOPED_TRACE(L);
    const int64_t chunk = L / 10 + 1;  // 65 -> 7 (LRA pads to 70), 40 -> 5 (pads to 50), 120 -> 13 (pads to 130)
    lra::Params lra_geometry = {{"n_chunks", int64_t{10}}, {"chunk_len", int64_t{64}}, {"n_buckets", int64_t{10}},
                                {"attend_across_buckets", true}};
    auto m = make_mixer("reformer", spec(), lra_geometry);
    auto x = random_input(2, L, D, 9);
    auto mask = lengths_mask(L, {L, L - 11});
    torch::NoGradGuard g;
    const auto pairs = lsh_pairs(*m, x, mask, {chunk, 10, 1, /*across=*/true});
    EXPECT_LT(real_diff(m->forward(x, mask), dense_reference(*m, x, pairs), mask), 1e-5);
    // Not the 64-position chunks of chunk_len: those would make every pair allowed at these lengths.
    EXPECT_LT(pairs.to(torch::kFloat).mean().item<double>(), 0.6);
  }
  // The rotations cover 10 buckets whatever max_len is.
  auto m = make_mixer("reformer", spec(), {{"n_chunks", int64_t{10}}});
  EXPECT_EQ(named(*m, "rotations").size(-1), 10) << "n_buckets 0: 2 x 10 chunks";
  EXPECT_THROW(make_mixer("reformer", spec(), {{"n_chunks", int64_t{-1}}}), lra::Error);
  EXPECT_TRUE(no_future_leak(*make_mixer("reformer", spec(true), {{"n_chunks", int64_t{4}}, {"n_buckets", int64_t{4}}}),
                             45, D));
}

TEST(Reformer, PaddingInvariant) {
  EXPECT_TRUE(padding_invariant(*make_mixer("reformer", spec()), 48, D));
  EXPECT_TRUE(padding_invariant(*make_mixer("reformer", spec(), params({8, 4, 2})), 48, D));
  EXPECT_TRUE(padding_invariant(*make_mixer("reformer", spec(), params({8, 4, 1, true})), 45, D));
}

TEST(Reformer, CausalModeReadsNoFuture) {
  EXPECT_TRUE(no_future_leak(*make_mixer("reformer", spec(true)), 200, D));
  EXPECT_TRUE(no_future_leak(*make_mixer("reformer", spec(true), params({8, 4, 1})), 40, D));
  EXPECT_TRUE(no_future_leak(*make_mixer("reformer", spec(true), params({8, 6, 3})), 45, D));
}

TEST(Reformer, RotationsFixedBySeedAndLayer) {
  auto s0 = spec(), s1 = spec();
  s1.layer_index = 1;
  auto a = make_mixer("reformer", s0, {}, 1), b = make_mixer("reformer", s0, {}, 2);
  auto c = make_mixer("reformer", s1);
  EXPECT_TRUE(torch::equal(named(*a, "rotations"), named(*b, "rotations"))) << "independent of the global RNG";
  EXPECT_FALSE(torch::equal(named(*a, "rotations"), named(*c, "rotations"))) << "differs per layer";
  auto x = random_input(1, 100, D);
  auto mask = lengths_mask(100, {100});
  torch::NoGradGuard g;
  EXPECT_TRUE(torch::equal(a->forward(x, mask), a->forward(x, mask)));
}

TEST(Reformer, AttentionDropoutOnlyInTraining) {
  auto s = spec();
  s.attention_dropout = 0.5;
  auto m = make_mixer("reformer", s, params({8, 4, 1}));
  auto x = random_input(2, 40, D);
  auto mask = lengths_mask(40, {40, 40});
  torch::NoGradGuard g;
  EXPECT_TRUE(torch::equal(m->forward(x, mask), m->forward(x, mask)));
  m->train();
  EXPECT_GT(max_abs_diff(m->forward(x, mask), m->forward(x, mask)), 1e-3);
}

TEST(Reformer, RejectsInvalidOptions) {
  EXPECT_THROW(make_mixer("reformer", spec(), {{"n_buckets", int64_t{3}}}), lra::Error);
  EXPECT_THROW(make_mixer("reformer", spec(), {{"chunk_len", int64_t{0}}}), lra::Error);
  EXPECT_THROW(make_mixer("reformer", spec(), {{"n_hashes", int64_t{0}}}), lra::Error);
  EXPECT_THROW(make_mixer("reformer", spec(true), {{"attend_across_buckets", true}}), lra::Error);
}
