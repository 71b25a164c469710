// Division classification, the parameter budget and typed mixer options.
#include <gtest/gtest.h>

#include "plugins/mixer_options.h"
#include "lra/status.h"
#include "rules/rules.h"

using namespace lra::host;

TEST(Rules, OfficialManifestWithoutOverridesIsClosed) {
  RunChoices c{"listops", "preset 'official'", "abc", "lra-v1/listops.toml", "abc", {}};
  auto d = classify_run(c);
  EXPECT_EQ(d.name, "closed");
  EXPECT_TRUE(d.reasons.empty());
}

TEST(Rules, EveryChangeOpensTheRunWithAReason) {
  RunChoices c{"listops", "preset 'smoke'", "def", "lra-v1/listops.toml", "abc", {"train.steps=10", "model.layers=1"}};
  auto d = classify_run(c);
  EXPECT_EQ(d.name, "open");
  ASSERT_EQ(d.reasons.size(), 3u);
  EXPECT_NE(d.reasons[0].find("preset 'smoke' differs from the official lra-v1/listops.toml"), std::string::npos);
  EXPECT_NE(d.reasons[1].find("train.steps=10"), std::string::npos);
  RunChoices none{"mytask", "preset 'official'", "x", "", "", {}};
  EXPECT_EQ(classify_run(none).name, "open");
}

TEST(Rules, BudgetIsTenPercentOverTheReference) {
  auto b = compute_param_budget(8948746, 1.1);
  EXPECT_EQ(b.budget, 9843620);  // floor(8,948,746 x 1.1); docs/rules.md, "Tiers"
  EXPECT_NO_THROW(enforce_param_budget(b, 9843620, "x"));
  try {
    enforce_param_budget(b, 9843621, "fat");
    FAIL();
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::rules);
    const std::string m = e.what();
    EXPECT_NE(m.find("9,843,621"), std::string::npos) << m;
    EXPECT_NE(m.find("8,948,746"), std::string::npos) << m;
    EXPECT_NE(m.find("9,843,620"), std::string::npos) << m;
  }
}

TEST(MixerOptions, ValuesAreParsedAsTheDeclaredType) {
  EXPECT_EQ(std::get<int64_t>(parse_typed("128", lra::Value(int64_t{1}), "k")), 128);
  EXPECT_DOUBLE_EQ(std::get<double>(parse_typed("0.5", lra::Value(1.0), "k")), 0.5);
  EXPECT_EQ(std::get<bool>(parse_typed("true", lra::Value(false), "k")), true);
  EXPECT_EQ(std::get<std::string>(parse_typed("abc", lra::Value(std::string()), "k")), "abc");
  EXPECT_THROW(parse_typed("12x", lra::Value(int64_t{1}), "k"), lra::Error);
  EXPECT_THROW(parse_typed("yes", lra::Value(false), "k"), lra::Error);
  EXPECT_THROW(parse_typed("", lra::Value(1.0), "k"), lra::Error);
}
