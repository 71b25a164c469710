// The MAD generators (tasks/mad): each task's layout, special tokens and scored
// positions are MAD's, the same seed gives the same examples, and the task
// plugins' options, splits and refusals (the fidelity of the distributions:
// test_mad_generators.cpp).
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
using mad_test::draw;
using mad_test::Example;
using mad_test::kIgnore;
using mad_test::setting;

// ---- rules: layouts, special tokens, scored positions ----

namespace {

// Recall: pairs at even offsets (or two noise tokens), a key's value fixed within the example, a repeated
// key's value scored at the key (multi-query), then [copy prefix] and the probe, whose value is scored.
void expect_recall_rules(const mad::Settings& s, const Example& e) {
  const auto l = mad::layout(s);
  const int64_t L = s.seq_len, at = s.multi_query ? L - 2 : L - 1;
  ASSERT_EQ(static_cast<int64_t>(e.x.size()), s.multi_query ? L - 1 : L);
  std::map<int32_t, int32_t> value_of;
  for (int64_t i = 0; i < L / 2 - 1; ++i) {
    const int32_t k = e.x[2 * i], v = e.x[2 * i + 1];
    EXPECT_EQ(e.y[2 * i + 1], kIgnore);
    if (k >= l.noise_begin) {
      EXPECT_LT(std::max(k, v), l.noise_begin + s.noise_vocab_size);
      EXPECT_GE(v, l.noise_begin);
      EXPECT_EQ(e.y[2 * i], kIgnore);
      continue;
    }
    EXPECT_LT(k, l.keys_end);
    EXPECT_GE(v, l.keys_end);
    EXPECT_LT(v, l.values_end);
    const bool seen = value_of.count(k);
    EXPECT_EQ(seen ? value_of[k] : v, v) << "a key keeps its value";
    value_of[k] = v;
    EXPECT_EQ(e.y[2 * i], seen && s.multi_query ? v : kIgnore) << "pair " << i;
  }
  if (!s.multi_query) {
    EXPECT_EQ(e.x[L - 2], s.vocab_size - 1) << "the copy prefix";
    EXPECT_EQ(e.y[L - 2], kIgnore);
  }
  ASSERT_TRUE(value_of.count(e.x[at])) << "the probe is a key shown before";
  EXPECT_EQ(e.y[at], value_of[e.x[at]]);
}

// Training targets are the next token everywhere; the last one is the probe's value.
void expect_shifted(const Example& train) {
  for (size_t t = 0; t + 1 < train.x.size(); ++t) ASSERT_EQ(train.y[t], train.x[t + 1]) << "position " << t;
  EXPECT_NE(train.y.back(), kIgnore);
}

}  // namespace

TEST(MadRules, RecallLayoutSpecialTokensAndScoredPositions) {
  for (const bool mq : {true, false})
    for (const Task t : {Task::recall, Task::noisy_recall}) {
      auto s = mad::baseline(t);
      s.multi_query = mq;
      const mad::Generator g(s);
      for (uint64_t i = 0; i < 50; ++i) {
        expect_recall_rules(s, draw(g, false, 3, i));
        expect_shifted(draw(g, true, 3, i));
      }
    }
}

// Fuzzy recall, evaluation: MAD's unshifted sequence is tokens + the last target; after the pads come
// keys of exactly k tokens, values of 1..v (fixed per key), noise runs and [the copy prefix]; a value is
// scored (shifted one left) only if its key came before, and the final probe's value always.
namespace {

void expect_fuzzy_rules(const mad::Settings& s, const Example& e) {
  const auto l = mad::layout(s);
  const auto pad = static_cast<int32_t>(s.multi_query ? s.vocab_size - 1 : s.vocab_size - 2);
  std::vector<int32_t> in = e.x, tg = {kIgnore};
  in.push_back(e.y.back());
  tg.insert(tg.end(), e.y.begin(), e.y.end());
  ASSERT_EQ(static_cast<int64_t>(e.x.size()), s.seq_len);
  size_t i = 0;
  while (in[i] == pad) EXPECT_EQ(tg[i++], kIgnore);
  EXPECT_GE(i, 1u) << "MAD pads to seq_len + 1";
  size_t probe_len = 0;  // the final value: the trailing scored run; its key the k tokens before
  while (tg[tg.size() - 1 - probe_len] != kIgnore) ++probe_len;
  const std::vector<int32_t> probe(in.end() - probe_len - s.k_motif_size, in.end() - probe_len);
  int unscored_probe_repeats = 0;
  std::map<std::vector<int32_t>, std::vector<int32_t>> value_of;
  auto cls = [&](int32_t t) { return t < l.keys_end ? 0 : t < l.values_end ? 1 : t == s.vocab_size - 1 ? 3 : 2; };
  while (i < in.size()) {
    const int c = cls(in[i]);
    if (c >= 2) {  // noise or the copy prefix: never scored
      EXPECT_EQ(tg[i++], kIgnore);
      continue;
    }
    ASSERT_EQ(c, 0) << "a value without its key at " << i;
    std::vector<int32_t> k, v;
    for (; i < in.size() && cls(in[i]) == 0; ++i) {
      k.push_back(in[i]);
      EXPECT_EQ(tg[i], kIgnore);
    }
    const size_t vat = i;
    for (; i < in.size() && cls(in[i]) == 1; ++i) v.push_back(in[i]);
    EXPECT_EQ(static_cast<int64_t>(k.size()), s.k_motif_size);
    ASSERT_GE(v.size(), 1u);
    EXPECT_LE(static_cast<int64_t>(v.size()), s.v_motif_size);
    EXPECT_EQ(std::set<int32_t>(k.begin(), k.end()).size(), k.size()) << "a motif's tokens are distinct";
    const bool seen = value_of.count(k), last = i == in.size();
    EXPECT_EQ(seen ? value_of[k] : v, v) << "a key keeps its value";
    value_of[k] = v;
    const std::vector<int32_t> got(tg.begin() + vat, tg.begin() + i);
    const bool is_scored = got == v, unscored = got == std::vector<int32_t>(v.size(), kIgnore);
    EXPECT_TRUE(is_scored || unscored) << "value at " << vat;
    if (last) {
      EXPECT_TRUE(is_scored) << "the final probe";
      if (!s.multi_query) {
        EXPECT_EQ(in[vat - k.size() - 1], s.vocab_size - 1) << "the copy prefix";
      }
    } else if (!seen || !s.multi_query) {
      EXPECT_TRUE(unscored) << "value at " << vat;
    } else if (k != probe) {
      EXPECT_TRUE(is_scored) << "a repeated key at " << vat;
    } else {
      unscored_probe_repeats += unscored;  // where MAD inserts the probe pair: never scored
    }
  }
  EXPECT_LE(unscored_probe_repeats, 1);
}

}  // namespace

TEST(MadRules, FuzzyRecallLayoutSpecialTokensAndScoredPositions) {
  for (const bool mq : {true, false})
    for (const double noise : {0.0, 0.3}) {
      auto s = mad::baseline(Task::fuzzy_recall);
      s.vocab_size = 32, s.multi_query = mq, s.frac_noise = noise, s.noise_vocab_size = noise > 0 ? 6 : 0;
      const mad::Generator g(s);
      for (uint64_t i = 0; i < 50; ++i) {
        expect_fuzzy_rules(s, draw(g, false, 4, i));
        expect_shifted(draw(g, true, 4, i));
      }
    }
}

TEST(MadRules, SelectiveCopyingAndCompressionLayouts) {
  const auto cs = mad::baseline(Task::selective_copy);
  const int64_t n = cs.num_tokens_to_copy, L = cs.seq_len;
  for (uint64_t i = 0; i < 50; ++i) {
    const auto e = draw(mad::Generator(cs), i % 2, 5, i);  // the same rules in every split
    std::vector<int32_t> symbols;
    for (int64_t t = 0; t < L - n - 1; ++t) {
      EXPECT_LT(e.x[t], 15);
      if (e.x[t] != 14) symbols.push_back(e.x[t]);
    }
    EXPECT_NE(e.x[L - n - 2], 14) << "no blank between the last symbol and the copy token";
    EXPECT_EQ(e.x[L - n - 1], 15) << "the copy token";
    EXPECT_EQ(std::vector<int32_t>(e.x.end() - n, e.x.end()), std::vector<int32_t>(n, 14));
    EXPECT_EQ(std::vector<int32_t>(e.y.begin(), e.y.end() - n), std::vector<int32_t>(L - n, kIgnore));
    EXPECT_EQ(std::vector<int32_t>(e.y.end() - n, e.y.end()), symbols) << "the symbols, in order";
  }
  auto cp = mad::baseline(Task::compression);
  cp.noise_vocab_size = 4, cp.frac_noise = 0.25;
  int64_t noise = 0;
  for (uint64_t i = 0; i < 50; ++i) {
    const auto e = draw(mad::Generator(cp), i % 2, 6, i);
    EXPECT_EQ(e.x.back(), 15) << "the compression token";
    EXPECT_EQ(e.y, e.x) << "MAD returns (inputs, inputs): every token, noise included";
    for (size_t t = 0; t + 1 < e.x.size(); ++t) {
      EXPECT_LT(e.x[t], 15);
      noise += e.x[t] >= 11;
    }
  }
  EXPECT_NEAR(noise / (50.0 * 31), 0.25, 0.04);
}

// ---- the plugins' half: options, splits, determinism ----

namespace {

lra::Dataset load(Task t, lra::Params p, int threads = 1) {
  p.emplace("num_train_examples", int64_t{40});
  p.emplace("num_val_examples", int64_t{20});
  p.emplace("num_test_examples", int64_t{20});
  lra::Dataset d;
  mad::load_dataset(t, p, threads, &d);
  return d;
}

const std::vector<Task> kTasks = {Task::recall,         Task::fuzzy_recall, Task::noisy_recall,
                                  Task::selective_copy, Task::compression,  Task::memorization};

}  // namespace

TEST(MadTasks, TheSameSeedGivesTheSameExamplesOnAnyThreadCountAndOthersDiffer) {
  for (const Task t : kTasks) {
    const auto a = load(t, {}), b = load(t, {}, 3), c = load(t, {{"seed", int64_t{7}}});
    EXPECT_EQ(a.train.tokens, b.train.tokens) << mad::task_name(t);
    EXPECT_EQ(a.test.tokens, b.test.tokens) << mad::task_name(t);
    EXPECT_EQ(a.sequence.val.targets, b.sequence.val.targets) << mad::task_name(t);
    EXPECT_NE(a.train.tokens, c.train.tokens) << mad::task_name(t);
    EXPECT_NE(a.val.tokens, a.test.tokens) << mad::task_name(t) << ": each split has its own stream";
    EXPECT_EQ(a.sequence.num_classes, a.info.vocab_size);
    EXPECT_EQ(a.info.natural_len, mad::baseline(t).seq_len);
    EXPECT_EQ(a.train.size(), 40u);
    EXPECT_EQ(a.sequence.test.targets.size(), a.test.tokens.size());
    EXPECT_NE(a.source.find("seed 12345"), std::string::npos) << a.source;
    // Compression is decoded from the last state (SDK 1.5), as MAD's AutoEncoder scores it.
    EXPECT_EQ(a.sequence.readout, t == Task::compression ? lra::SequenceReadout::from_last_state
                                                         : lra::SequenceReadout::every_position)
        << mad::task_name(t);
  }
}

TEST(MadTasks, MemorizationsMapIsTheSameInEverySplitAndExample) {
  const auto d = load(Task::memorization, {{"vocab_size", int64_t{64}}});
  std::map<int32_t, int32_t> map;
  for (const auto& [split, tg] :
       {std::pair{&d.train, &d.sequence.train}, {&d.val, &d.sequence.val}, {&d.test, &d.sequence.test}})
    for (size_t p = 0; p < split->tokens.size(); p += 2) {  // (key, insert token V-1) pairs
      EXPECT_LT(split->tokens[p], 31);
      EXPECT_EQ(split->tokens[p + 1], 63);
      EXPECT_EQ(tg->targets[p], kIgnore);
      const auto [it, fresh] = map.emplace(split->tokens[p], tg->targets[p + 1]);
      EXPECT_EQ(it->second, tg->targets[p + 1]) << "key " << split->tokens[p];
      EXPECT_GE(it->second, 31);
      EXPECT_LT(it->second, 63);
    }
  EXPECT_GT(map.size(), 25u);  // of the 31 keys
  std::set<int32_t> values;
  for (const auto& [k, v] : map) values.insert(v);
  EXPECT_EQ(values.size(), map.size()) << "one value per key";
  EXPECT_NE(mad::memorization_map(64, 12345), mad::memorization_map(64, 12346)) << "the map comes from the seed";
}

TEST(MadTasks, OptionsDefaultToMadsBaselinesAndBadValuesAreRefusedByName) {
  auto value = [](Task t, const std::string& k) {
    for (const auto& o : mad::option_specs(t))
      if (o.name == k) return lra::to_string(o.default_value);
    return std::string("missing");
  };
  EXPECT_EQ(value(Task::recall, "vocab_size") + value(Task::recall, "seq_len") + value(Task::recall, "multi_query"),
            "16128true");
  EXPECT_EQ(value(Task::noisy_recall, "vocab_size") + value(Task::noisy_recall, "noise_vocab_size") +
                value(Task::noisy_recall, "frac_noise"),
            "32160.2");
  EXPECT_EQ(value(Task::fuzzy_recall, "k_motif_size") + value(Task::fuzzy_recall, "v_motif_size"), "33");
  EXPECT_EQ(value(Task::selective_copy, "seq_len") + value(Task::selective_copy, "num_tokens_to_copy"), "25616");
  EXPECT_EQ(value(Task::compression, "seq_len") + value(Task::memorization, "vocab_size"), "32256");
  EXPECT_EQ(value(Task::memorization, "num_train_examples") + value(Task::recall, "num_train_examples"), "25612800");
  EXPECT_EQ(value(Task::recall, "num_test_examples") + value(Task::recall, "seed"), "128012345");
  EXPECT_EQ(value(Task::memorization, "frac_noise"), "missing");
  const std::vector<std::tuple<Task, std::string, lra::Value>> bad = {
      {Task::recall, "seq_len", int64_t{127}},
      {Task::noisy_recall, "frac_noise", 1.0},
      {Task::noisy_recall, "vocab_size", int64_t{17}},
      {Task::fuzzy_recall, "vocab_size", int64_t{6}},
      {Task::fuzzy_recall, "seq_len", int64_t{12}},
      {Task::selective_copy, "seq_len", int64_t{33}},
      {Task::compression, "frac_noise", -0.5},
      {Task::memorization, "num_test_examples", int64_t{0}},
      {Task::recall, "seed", int64_t{-1}},
      {Task::memorization, "vocab_size", int64_t{2}}};
  for (const auto& [t, key, v] : bad) {
    try {
      load(t, {{key, v}});
      ADD_FAILURE() << mad::task_name(t) << " accepted " << key << " = " << lra::to_string(v);
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::rules);
      const std::string want = mad::task_name(t) + " [data] " + key + ": " + lra::to_string(v);
      EXPECT_EQ(std::string(e.what()).rfind(want, 0), 0u) << e.what() << " (want " << want << ")";
    }
  }
}
