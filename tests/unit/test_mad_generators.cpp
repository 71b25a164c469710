// The MAD generators (tasks/mad) against MAD's own: their distributions match
// examples drawn by MAD's own instances.py — two-sample
// Kolmogorov-Smirnov and chi-square tests against committed statistics
// (tests/fixtures/mad/README.md), each shown able to reject a wrong variant.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "lra/status.h"
#include "mad_dataset.h"
#include "mad_generators.h"
#include "mad_test_util.h"

namespace mad = lra::tasks::mad;
using mad::Task;

namespace {

using mad_test::Example;
using mad_test::kIgnore;
using mad_test::setting;
using mad_test::draw;

// ---- two-sample tests over histograms (value -> count) ----

using Histogram = std::map<int64_t, int64_t>;
using Stats = std::map<std::string, Histogram>;

double total(const Histogram& h) {
  double n = 0;
  for (const auto& [v, c] : h) n += c;
  return n;
}

// Kolmogorov-Smirnov: asymptotic p (Numerical Recipes' probks, Stephens' correction); conservative on ties.
double ks_p(const Histogram& a, const Histogram& b) {
  const double na = total(a), nb = total(b);
  std::set<int64_t> values;
  for (const auto* h : {&a, &b})
    for (const auto& [v, c] : *h) values.insert(v);
  double ca = 0, cb = 0, d = 0;
  for (const auto v : values) {
    if (auto it = a.find(v); it != a.end()) ca += it->second;
    if (auto it = b.find(v); it != b.end()) cb += it->second;
    d = std::max(d, std::abs(ca / na - cb / nb));
  }
  const double ne = std::sqrt(na * nb / (na + nb)), lambda = (ne + 0.12 + 0.11 / ne) * d;
  if (lambda < 0.3) return 1.0;
  double p = 0, sign = 1;
  for (int k = 1; k <= 100; ++k, sign = -sign) p += 2 * sign * std::exp(-2.0 * k * k * lambda * lambda);
  return std::clamp(p, 0.0, 1.0);
}

// Upper regularized incomplete gamma Q(a, x) (Numerical Recipes' gammq).
double gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double lead = std::exp(-x + a * std::log(x) - std::lgamma(a));
  if (x < a + 1) {  // series for P
    double sum = 1.0 / a, del = sum, ap = a;
    for (int n = 0; n < 10000 && std::abs(del) > std::abs(sum) * 1e-15; ++n) sum += del *= x / ++ap;
    return std::clamp(1.0 - sum * lead, 0.0, 1.0);
  }
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;  // continued fraction for Q
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b, c = b + an / c;
    d = std::abs(d) < 1e-300 ? 1e300 : 1 / d;
    c = std::abs(c) < 1e-300 ? 1e-300 : c;
    h *= d * c;
    if (std::abs(d * c - 1) < 1e-15) break;
  }
  return std::clamp(lead * h, 0.0, 1.0);
}

// Chi-square two-sample test of homogeneity (unequal sample sizes).
double chi2_p(const Histogram& a, const Histogram& b) {
  const double na = total(a), nb = total(b), ka = std::sqrt(nb / na), kb = std::sqrt(na / nb);
  std::set<int64_t> values;
  for (const auto* h : {&a, &b})
    for (const auto& [v, c] : *h) values.insert(v);
  double x2 = 0;
  for (const auto v : values) {
    const double ca = a.count(v) ? a.at(v) : 0, cb = b.count(v) ? b.at(v) : 0;
    x2 += (ka * ca - kb * cb) * (ka * ca - kb * cb) / (ca + cb);
  }
  return values.size() < 2 ? 1.0 : gamma_q((values.size() - 1) / 2.0, x2 / 2);
}

// Categorical statistics (token identities) get chi-square, counts and positions KS.
double p_value(const std::string& stat, const Histogram& ours, const Histogram& theirs) {
  static const std::set<std::string> categorical = {"targets",   "tokens",        "keys",         "probe_value",
                                                    "probe_len", "probe_in_body", "train_key_len"};
  return categorical.count(stat) ? chi2_p(ours, theirs) : ks_p(ours, theirs);
}

// ---- statistics of one example, as the fixture's were computed (README) ----

void add(Stats& s, const std::string& k, int64_t v) { ++s[k][v]; }

// Scored positions, and the last one's target (one per example: a value repeats within an example).
void scored(Stats& s, const Example& e, size_t probe_at) {
  add(s, "scored", static_cast<int64_t>(e.y.size() - std::count(e.y.begin(), e.y.end(), kIgnore)));
  add(s, "probe_value", e.y[probe_at]);
}

void recall_stats(Stats& s, const Example& e, int64_t V, int64_t nv, int64_t L) {
  const int64_t ns = V - nv, pairs = L / 2 - 1;
  std::map<int32_t, int64_t> last;
  std::set<int32_t> keys, values;
  int64_t noise = 0, probe = 0;
  for (int64_t i = 0; i < pairs; ++i) {
    const int32_t k = e.x[2 * i];
    if (k >= ns) {
      ++noise;
      continue;
    }
    if (auto it = last.find(k); it != last.end()) add(s, "query_gap", i - it->second);
    last[k] = i, keys.insert(k), values.insert(e.x[2 * i + 1]);
    probe += k == e.x[L - 2];
  }
  scored(s, e, L - 2);
  add(s, "distinct_keys", static_cast<int64_t>(keys.size()));
  add(s, "distinct_values", static_cast<int64_t>(values.size()));
  add(s, "noise_pairs", noise);
  add(s, "probe_count", probe);
}

// Key runs (tokens below ns/2) after the leading pads; classes split runs as in the fixture.
std::vector<std::vector<int32_t>> key_runs(const std::vector<int32_t>& x, size_t from, int64_t ns) {
  std::vector<std::vector<int32_t>> out;
  int prev = -1;
  for (size_t i = from; i < x.size(); ++i) {
    const int c = x[i] < ns / 2 ? 0 : x[i] < ns ? 1 : 2;
    if (c == 0 && prev == 0) out.back().push_back(x[i]);
    if (c == 0 && prev != 0) out.push_back({x[i]});
    prev = c;
  }
  return out;
}

void fuzzy_stats(Stats& s, const Example& e, int64_t V, bool training) {
  const int64_t ns = V - 1;
  size_t pads = 0;
  while (pads < e.x.size() && e.x[pads] == V - 1) ++pads;
  const auto keys = key_runs(e.x, pads, ns);
  if (training) {
    add(s, "train_pads", static_cast<int64_t>(pads));
    for (const auto& k : keys) add(s, "train_key_len", static_cast<int64_t>(k.size()));
    return;
  }
  int64_t tail = 0;
  while (tail < static_cast<int64_t>(e.y.size()) && e.y[e.y.size() - 1 - tail] != kIgnore) ++tail;
  scored(s, e, e.y.size() - 1);
  add(s, "pads", static_cast<int64_t>(pads));
  add(s, "probe_len", tail);
  add(s, "key_runs", static_cast<int64_t>(keys.size()));
  add(s, "probe_in_body", std::count(keys.begin(), keys.end() - 1, keys.back()) > 0);
}

void copy_stats(Stats& s, const Example& e, int64_t V, int64_t L, int64_t n) {
  int64_t run = 0, first = -1;
  for (int64_t i = 0; i < L - n - 1; ++i) {
    if (e.x[i] == V - 2) {
      ++run;
      continue;
    }
    add(s, "gaps", run);
    run = 0;
    if (first < 0) first = i;
  }
  add(s, "first_pos", first);
  for (const auto t : e.y)
    if (t != kIgnore) add(s, "targets", t);
}

void compression_stats(Stats& s, const Example& e) {
  const std::set<int32_t> distinct(e.x.begin(), e.x.end() - 1);
  for (size_t i = 0; i + 1 < e.x.size(); ++i) add(s, "tokens", e.x[i]);
  add(s, "distinct", static_cast<int64_t>(distinct.size()));
}

void memorization_stats(Stats& s, const Example& e) {
  std::set<int32_t> distinct;
  for (size_t i = 0; i < e.x.size(); i += 2) add(s, "keys", e.x[i]), distinct.insert(e.x[i]);
  add(s, "distinct_keys", static_cast<int64_t>(distinct.size()));
}

using Extract = std::function<void(Stats&, const Example&)>;

Stats draw_stats(const mad::Settings& s, bool training, int64_t n, const Extract& f, uint64_t stream = 99) {
  const mad::Generator g(s);
  Stats out;
  for (int64_t i = 0; i < n; ++i) f(out, draw(g, training, stream, static_cast<uint64_t>(i)));
  return out;
}

const nlohmann::json& fixture() {
  static const nlohmann::json fx = [] {
    std::ifstream in(std::string(LRA_SOURCE_DIR) + "/tests/fixtures/mad/mad_stats.json");
    EXPECT_TRUE(in.good());
    return nlohmann::json::parse(in);
  }();
  return fx;
}

Histogram histogram(const nlohmann::json& pairs) {
  Histogram h;
  for (const auto& vc : pairs) h[vc[0].get<int64_t>()] = vc[1].get<int64_t>();
  return h;
}

// Every statistic the fixture cell holds for `ours` (those named in `stats`): p > 1e-3.
void expect_like_mad(const nlohmann::json& cell, const Stats& ours, const std::vector<std::string>& stats,
                     const std::string& what) {
  for (const auto& k : stats) {
    ASSERT_TRUE(cell.contains(k)) << what << ": fixture lacks " << k;
    ASSERT_TRUE(ours.count(k)) << what << ": we drew no " << k;
    const double p = p_value(k, ours.at(k), histogram(cell[k]));
    std::printf("  %-44s %-16s p = %.3g\n", what.c_str(), k.c_str(), p);
    EXPECT_GT(p, 1e-3) << what << ": " << k;
  }
}

// A deliberately wrong variant: the same test must reject it, p < 1e-6.
void expect_rejected(const nlohmann::json& cell, const Stats& wrong, const std::string& k, const std::string& mad_k,
                     const std::string& what) {
  const double p = p_value(k, wrong.at(k), histogram(cell[mad_k]));
  std::printf("  %-44s %-16s p = %.3g (wrong variant)\n", what.c_str(), k.c_str(), p);
  EXPECT_LT(p, 1e-6) << what << ": the wrong variant passes on " << k;
}

std::string cell_name(const std::string& task, const nlohmann::json& c) {
  return task + " V" + std::to_string(c["vocab_size"].get<int64_t>()) + " L" +
         std::to_string(c["seq_len"].get<int64_t>());
}

int64_t examples() { return 2 * fixture()["examples_per_cell"].get<int64_t>(); }

}  // namespace

// ---- fidelity: ours against MAD's own draws, and a wrong variant rejected ----

TEST(MadFidelity, TheTwoSampleTestsAreCalibrated) {
  // Chi-square survival: 10 degrees of freedom at 10 (the series), 1 at 4 = erfc(sqrt 2) and 100 at 160
  // (the continued fraction).
  EXPECT_NEAR(gamma_q(5, 5), 0.440493, 1e-6);
  EXPECT_NEAR(gamma_q(0.5, 2), 0.0455003, 1e-7);
  EXPECT_NEAR(gamma_q(50, 80), 1.30784e-4, 1e-8);
  const Histogram h = {{1, 30}, {2, 50}, {3, 20}};
  EXPECT_EQ(ks_p(h, h), 1.0);
  EXPECT_NEAR(chi2_p(h, h), 1.0, 1e-12);
}

TEST(MadFidelity, InContextRecallMatchesMad) {
  for (const auto& c : fixture()["tasks"]["recall"]) {
    const auto s = setting(Task::recall, c["vocab_size"], c["seq_len"]);
    const auto f = [&](Stats& st, const Example& e) { recall_stats(st, e, s.vocab_size, 0, s.seq_len); };
    const auto ours = draw_stats(s, false, examples(), f);
    expect_like_mad(c, ours, {"scored", "probe_value", "distinct_keys", "distinct_values", "probe_count", "query_gap"},
                    cell_name("recall", c));
    // Wrong: the final probe's key taken from a uniform pair (favouring frequent keys), not a uniform distinct key.
    uint64_t drawn = 0;
    const auto wrong = draw_stats(s, false, examples(), [&](Stats& st, Example e) {
      lra::tasks::Rng pick(7, drawn++);
      const int64_t i = static_cast<int64_t>(pick.below(static_cast<uint64_t>(s.seq_len / 2 - 1)));
      e.x[s.seq_len - 2] = e.x[2 * i];
      f(st, e);
    });
    expect_rejected(c, wrong, "probe_count", "probe_count", cell_name("recall", c));
  }
}

TEST(MadFidelity, NoisyRecallMatchesMad) {
  for (const auto& c : fixture()["tasks"]["noisy_recall"]) {
    auto s = setting(Task::noisy_recall, c["vocab_size"], c["seq_len"]);
    s.noise_vocab_size = c["noise_vocab_size"], s.frac_noise = c["frac_noise"];
    const auto f = [&](Stats& st, const Example& e) {
      recall_stats(st, e, s.vocab_size, s.noise_vocab_size, s.seq_len);
    };
    const auto name = cell_name("noisy_recall", c) + " noise " + std::to_string(s.frac_noise).substr(0, 3);
    expect_like_mad(
        c, draw_stats(s, false, examples(), f),
        {"scored", "probe_value", "distinct_keys", "distinct_values", "probe_count", "noise_pairs", "query_gap"}, name);
    s.frac_noise += 0.05;  // wrong: a noise rate off by 0.05
    expect_rejected(c, draw_stats(s, false, examples(), f), "noise_pairs", "noise_pairs", name);
  }
}

TEST(MadFidelity, FuzzyRecallMatchesMad) {
  for (const auto& c : fixture()["tasks"]["fuzzy_recall"]) {
    auto s = setting(Task::fuzzy_recall, c["vocab_size"], c["seq_len"]);
    s.k_motif_size = c["k_motif_size"], s.v_motif_size = c["v_motif_size"];
    const auto test = [&](Stats& st, const Example& e) { fuzzy_stats(st, e, s.vocab_size, false); };
    const auto train = [&](Stats& st, const Example& e) { fuzzy_stats(st, e, s.vocab_size, true); };
    const auto name = cell_name("fuzzy_recall", c);
    expect_like_mad(c, draw_stats(s, false, examples(), test),
                    {"pads", "scored", "probe_len", "probe_value", "key_runs", "probe_in_body"}, name);
    expect_like_mad(c, draw_stats(s, true, examples(), train), {"train_pads", "train_key_len"}, name + " train");
    // Wrong: evaluation keys of 1..k tokens, as in training (MAD prompts at exactly k).
    expect_rejected(c, draw_stats(s, true, examples(), train), "train_pads", "pads", name);
  }
}

namespace {

// Wrong: blanks also after the last symbol (n + 1 places; MAD's randint(0, n) has n).
Example copy_one_slot_too_many(const mad::Settings& s, uint64_t index) {
  lra::tasks::Rng rng(5, index);
  const int64_t n = s.num_tokens_to_copy, L = s.seq_len;
  std::vector<int64_t> before(n + 1, 0);
  for (int64_t b = 0; b < L - 2 * n - 1; ++b) ++before[rng.below(static_cast<uint64_t>(n + 1))];
  Example e;
  for (int64_t j = 0; j <= n; ++j) {
    e.x.insert(e.x.end(), before[j], static_cast<int32_t>(s.vocab_size - 2));
    if (j < n) e.x.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(s.vocab_size - 2))));
  }
  e.x.push_back(static_cast<int32_t>(s.vocab_size - 1));
  e.x.insert(e.x.end(), n, static_cast<int32_t>(s.vocab_size - 2));
  e.y.assign(L, kIgnore);
  return e;
}

}  // namespace

TEST(MadFidelity, SelectiveCopyingMatchesMad) {
  for (const auto& c : fixture()["tasks"]["selective_copy"]) {
    auto s = setting(Task::selective_copy, c["vocab_size"], c["seq_len"]);
    s.num_tokens_to_copy = c["num_tokens_to_copy"];
    const auto f = [&](Stats& st, const Example& e) {
      copy_stats(st, e, s.vocab_size, s.seq_len, s.num_tokens_to_copy);
    };
    const auto name = cell_name("selective_copy", c) + " n" + std::to_string(s.num_tokens_to_copy);
    expect_like_mad(c, draw_stats(s, false, examples(), f), {"gaps", "first_pos", "targets"}, name);
    Stats wrong;
    for (int64_t i = 0; i < examples(); ++i) f(wrong, copy_one_slot_too_many(s, static_cast<uint64_t>(i)));
    expect_rejected(c, wrong, "gaps", "gaps", name);
  }
}

TEST(MadFidelity, CompressionMatchesMad) {
  for (const auto& c : fixture()["tasks"]["compression"]) {
    auto s = setting(Task::compression, c["vocab_size"], c["seq_len"]);
    const auto name = cell_name("compression", c);
    expect_like_mad(c, draw_stats(s, false, examples(), compression_stats), {"tokens", "distinct"}, name);
    ++s.vocab_size;  // wrong: symbols over [0, V-1), MAD's compression token among them
    expect_rejected(c, draw_stats(s, false, examples(), compression_stats), "tokens", "tokens", name);
  }
}

TEST(MadFidelity, MemorizationMatchesMad) {
  for (const auto& c : fixture()["tasks"]["memorization"]) {
    auto s = setting(Task::memorization, c["vocab_size"], c["seq_len"]);
    const auto name = cell_name("memorization", c);
    expect_like_mad(c, draw_stats(s, false, examples(), memorization_stats), {"keys", "distinct_keys"}, name);
    // The map's shape: as many keys as MAD's, injective, onto values in MAD's range.
    const auto map = mad::memorization_map(s.vocab_size, s.seed);
    EXPECT_EQ(static_cast<int64_t>(map.size()), c["map_keys"].get<int64_t>());
    EXPECT_EQ(static_cast<int64_t>(std::set<int32_t>(map.begin(), map.end()).size()), c["map_distinct_values"]);
    EXPECT_GE(*std::min_element(map.begin(), map.end()), c["map_value_min"].get<int32_t>());
    EXPECT_LE(*std::max_element(map.begin(), map.end()), c["map_value_max"].get<int32_t>());
    // Wrong: an example's keys distinct (drawn without replacement; MAD's repeat).
    const auto wrong = draw_stats(s, false, examples(), [&](Stats& st, Example e) {
      std::set<int32_t> used(e.x.begin(), e.x.end());
      for (size_t p = 0, fresh = 0; p < e.x.size(); p += 2)
        if (std::count(e.x.begin(), e.x.begin() + p, e.x[p])) {
          while (used.count(static_cast<int32_t>(fresh))) ++fresh;
          e.x[p] = static_cast<int32_t>(fresh), used.insert(e.x[p]);
        }
      memorization_stats(st, e);
    });
    expect_rejected(c, wrong, "distinct_keys", "distinct_keys", name);
  }
}
