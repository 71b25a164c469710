// The MQAR generator (tasks/mqar): its examples follow Zoology's rules, are
// the same for the same seed, and their query placement follows Zoology's
// distribution — two-sample Kolmogorov-Smirnov tests against statistics of
// examples drawn by Zoology's own code (tests/fixtures/mqar/README.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lra/status.h"
#include "mqar_generator.h"

namespace mq = lra::tasks::mqar;

namespace {

struct Example {
  std::vector<int32_t> tokens, targets;
};

Example draw(const mq::Settings& s, int64_t L, int64_t P, uint64_t seed, uint64_t index) {
  Example e{std::vector<int32_t>(L), std::vector<int32_t>(L)};
  mq::generate_example(s, L, P, seed, index, e.tokens.data(), e.targets.data());
  return e;
}

// Histogram value -> count.
using Histogram = std::map<int64_t, int64_t>;

// The two-sample KS statistic D and its asymptotic p-value (Numerical Recipes' probks with
// Stephens' small-sample correction); discrete data make it conservative.
std::pair<double, double> ks_test(const Histogram& a, const Histogram& b) {
  double na = 0, nb = 0;
  for (const auto& [v, c] : a) na += c;
  for (const auto& [v, c] : b) nb += c;
  std::set<int64_t> values;
  for (const auto& [v, c] : a) values.insert(v);
  for (const auto& [v, c] : b) values.insert(v);
  double ca = 0, cb = 0, d = 0;
  for (const auto v : values) {
    if (auto it = a.find(v); it != a.end()) ca += it->second;
    if (auto it = b.find(v); it != b.end()) cb += it->second;
    d = std::max(d, std::abs(ca / na - cb / nb));
  }
  const double ne = std::sqrt(na * nb / (na + nb));
  const double lambda = (ne + 0.12 + 0.11 / ne) * d;
  double p = 0, sign = 1;
  for (int k = 1; k <= 100; ++k, sign = -sign) p += 2 * sign * std::exp(-2.0 * k * k * lambda * lambda);
  return {d, std::clamp(p, 0.0, 1.0)};
}

Histogram histogram(const nlohmann::json& pairs) {
  Histogram h;
  for (const auto& vc : pairs) h[vc[0].get<int64_t>()] = vc[1].get<int64_t>();
  return h;
}

// Query-to-key distances (and filler counts) of `n` generated examples.
struct Drawn {
  Histogram distances;
  int64_t fillers = 0, filler_zeros = 0;
};
Drawn draw_statistics(const mq::Settings& s, int64_t L, int64_t P, int64_t n, uint64_t seed) {
  Drawn out;
  for (int64_t i = 0; i < n; ++i) {
    const auto e = draw(s, L, P, seed, static_cast<uint64_t>(i));
    std::map<int32_t, int64_t> key_at;
    for (int64_t j = 0; j < P; ++j) key_at[e.tokens[2 * j]] = 2 * j;
    for (int64_t t = 2 * P; t < L; ++t) {
      if (e.targets[t] != -100) {
        ++out.distances[t - key_at.at(e.tokens[t])];
      } else {
        ++out.fillers;
        out.filler_zeros += e.tokens[t] == 0;
      }
    }
  }
  return out;
}

nlohmann::json fixture() {
  std::ifstream in(std::string(LRA_SOURCE_DIR) + "/tests/fixtures/mqar/zoology_stats.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

}  // namespace

TEST(MqarGenerator, AnExampleFollowsZoologysLayout) {
  const mq::Settings s;  // vocabulary 8192
  for (const auto& [L, P] : std::vector<std::pair<int64_t, int64_t>>{{64, 4}, {256, 64}, {1024, 256}}) {
    const auto e = draw(s, L, P, 7, 3);
    std::set<int32_t> keys, values;
    for (int64_t j = 0; j < P; ++j) {
      EXPECT_GE(e.tokens[2 * j], 1);
      EXPECT_LT(e.tokens[2 * j], 4096);
      EXPECT_GE(e.tokens[2 * j + 1], 4096);
      EXPECT_LT(e.tokens[2 * j + 1], 8192);
      keys.insert(e.tokens[2 * j]);
      values.insert(e.tokens[2 * j + 1]);
      EXPECT_EQ(e.targets[2 * j], -100);
      EXPECT_EQ(e.targets[2 * j + 1], -100);
    }
    EXPECT_EQ(keys.size(), static_cast<size_t>(P)) << "keys are distinct";
    EXPECT_EQ(values.size(), static_cast<size_t>(P)) << "values are distinct";
    // Every key is queried exactly once, at an even offset after the pairs, with its own value as the target.
    std::map<int32_t, int32_t> value_of;
    for (int64_t j = 0; j < P; ++j) value_of[e.tokens[2 * j]] = e.tokens[2 * j + 1];
    std::set<int32_t> queried;
    for (int64_t t = 2 * P; t < L; ++t) {
      if (e.targets[t] == -100) continue;
      EXPECT_EQ((t - 2 * P) % 2, 0) << "query at " << t;
      ASSERT_TRUE(value_of.count(e.tokens[t])) << "the token at a query is a key";
      EXPECT_EQ(e.targets[t], value_of[e.tokens[t]]);
      EXPECT_TRUE(queried.insert(e.tokens[t]).second) << "queried twice";
    }
    EXPECT_EQ(queried.size(), static_cast<size_t>(P));
  }
}

TEST(MqarGenerator, TheSameStreamGivesTheSameExampleAndOthersDiffer) {
  const mq::Settings s;
  const auto a = draw(s, 256, 16, 42, 5), b = draw(s, 256, 16, 42, 5);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.targets, b.targets);
  EXPECT_NE(draw(s, 256, 16, 42, 6).tokens, a.tokens);
  EXPECT_NE(draw(s, 256, 16, 43, 5).tokens, a.tokens);
}

TEST(MqarGenerator, FillersAreZeroOrUniformOverTheVocabulary) {
  mq::Settings zero;
  zero.random_non_queries = false;
  const auto z = draw_statistics(zero, 128, 8, 50, 1);
  EXPECT_EQ(z.filler_zeros, z.fillers);
  const auto r = draw_statistics(mq::Settings{}, 1024, 16, 200, 1);
  // Random fillers are uniform over [0, 8192): token 0 about once in 8192.
  const double expected = r.fillers / 8192.0;
  EXPECT_LT(std::abs(r.filler_zeros - expected), 5 * std::sqrt(expected) + 1) << r.filler_zeros << " zeros";
}

TEST(MqarGenerator, QueryDistancesMatchZoologysGeneratorInEveryCell) {
  const auto fx = fixture();
  ASSERT_EQ(fx["vocab_size"], 8192);
  ASSERT_GE(fx["cells"].size(), 10u);
  for (const auto& cell : fx["cells"]) {
    mq::Settings s;
    s.power_a = fx["power_a"].get<double>();
    s.random_non_queries = cell["random_non_queries"].get<bool>();
    const int64_t L = cell["length"], P = cell["pairs"], n = cell["examples"];
    const auto ours = draw_statistics(s, L, P, 2 * n, 99);
    const auto theirs = histogram(cell["query_distances_histogram"]);
    const auto [d, p] = ks_test(ours.distances, theirs);
    std::printf("  length %4lld, %3lld pairs, random fillers %d: KS D = %.4f, p = %.3f\n", static_cast<long long>(L),
                static_cast<long long>(P), s.random_non_queries ? 1 : 0, d, p);
    EXPECT_GT(p, 1e-3) << "length " << L << ", " << P << " pairs, random fillers " << s.random_non_queries
                       << ": KS D = " << d;
    // The fillers: all zero without random_non_queries, as in the fixture; about 1/V zeros with.
    const int64_t fillers = cell["filler_tokens"], zeros = cell["filler_zeros"];
    if (!s.random_non_queries) {
      EXPECT_EQ(zeros, fillers);
      EXPECT_EQ(ours.filler_zeros, ours.fillers);
    } else {
      EXPECT_LT(static_cast<double>(ours.filler_zeros) / ours.fillers, 0.002);
      EXPECT_LT(static_cast<double>(zeros) / fillers, 0.002);
    }
  }
}

// The check above can fail: uniform gaps (power_a = 1) are not Zoology's power law.
TEST(MqarGenerator, TheFidelityTestRejectsAnotherGapDistribution) {
  const auto fx = fixture();
  int rejected = 0, cells = 0;
  for (const auto& cell : fx["cells"]) {
    mq::Settings s;
    s.power_a = 1.0;
    s.random_non_queries = cell["random_non_queries"].get<bool>();
    const int64_t L = cell["length"], P = cell["pairs"], n = cell["examples"];
    if (2 * P * 2 == L) continue;  // every gap is taken: the placement cannot differ
    ++cells;
    const auto [d, p] = ks_test(draw_statistics(s, L, P, 2 * n, 99).distances, histogram(cell["query_distances_histogram"]));
    rejected += p < 1e-6;
  }
  EXPECT_GT(cells, 0);
  EXPECT_EQ(rejected, cells);
}

TEST(MqarGenerator, GridsAndCellsAreCheckedWithZoologysRules) {
  const auto cells = mq::parse_grid("64x4x100,1024x256x1000", "test_grid");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[1].length, 1024);
  EXPECT_EQ(cells[1].pairs, 256);
  EXPECT_EQ(cells[1].examples, 1000);
  EXPECT_EQ(mq::grid_text(cells), "64x4x100,1024x256x1000");
  for (const char* bad : {"", "64x4", "64x4x", "64x4x0", "x4x1", "64*4*1", "64x4x10 junk", "-64x4x1"}) {
    try {
      mq::parse_grid(bad, "train_grid");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::rules);
      EXPECT_NE(std::string(e.what()).find("train_grid"), std::string::npos) << e.what();
    }
  }
  const mq::Settings s;
  EXPECT_NO_THROW(mq::validate(s, {64, 16, 1}, "g"));
  for (const mq::Cell bad : {mq::Cell{63, 4, 1}, mq::Cell{64, 17, 1}, mq::Cell{8192, 4, 1}}) {
    EXPECT_THROW(mq::validate(s, bad, "g"), lra::Error) << bad.name();
  }
}
