// [settings]: a protocol's named variants (manifest/manifest_settings.cpp),
// MAD's difficulty settings. --set assignments that are exactly one setting
// stand on it (not overrides, the run stays closed); anything else is an
// override; each setting must apply to the file and change what it lists; the
// settings travel in the resolved configuration and back; mad-v1 states MAD's
// 66 settings.
#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "lra/status.h"
#include "manifest/manifest.h"
#include "manifest/presets.h"

namespace lra::host {
namespace {

// The MAD recall smoke manifest, then `settings` as its [settings].
std::string with_settings(const std::string& settings) {
  return std::string(load_preset("mad_recall", "smoke").text) + "\n[settings]\n" + settings;
}

std::string error_of(const std::string& text) {
  try {
    parse_manifest(text, "s.toml");
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::rules) << e.what();
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const char* kTwo =
    "vocab_size-32 = { data.vocab_size = 32 }\n"
    "num_train_examples-800 = { data.num_train_examples = 800, train.steps = 500 }\n";

TEST(ManifestSettings, ReadsSettingsInTheFilesOrder) {
  const Manifest m = parse_manifest(with_settings(kTwo), "s.toml");
  ASSERT_EQ(m.settings.size(), 2u);
  EXPECT_EQ(m.settings[0].name, "vocab_size-32");  // toml++ would sort it after "num_..."
  EXPECT_EQ(m.settings[1].name, "num_train_examples-800");
  EXPECT_EQ(setting_assignments(m.settings[1]),
            (std::vector<std::string>{"data.num_train_examples=800", "train.steps=500"}));
  EXPECT_EQ(setting_name(m), "baseline");
  EXPECT_TRUE(parse_manifest(load_preset("mad_recall", "smoke").text, "p.toml").settings.empty());
}

TEST(ManifestSettings, BadSettingsAreRefusedNamingTheSetting) {
  EXPECT_TRUE(contains(error_of(with_settings("baseline = { data.vocab_size = 32 }\n")), "names the file's own"));
  EXPECT_TRUE(contains(error_of(with_settings("v = { data.num_train_examples = 3200 }\n")), "is the file's own value"));
  EXPECT_TRUE(contains(error_of(with_settings("v = { train.seed = 3 }\n")), "train.seed is the trial seed"));
  EXPECT_TRUE(contains(error_of(with_settings("v = { train.weight_decay = 0.3 }\n")), "is an axis of [grid]"));
  EXPECT_TRUE(contains(error_of(with_settings("v = { rules.param_budget_ratio = 3.0 }\n")),
                       "a setting changes [data], [model] or [train] keys"));
  EXPECT_TRUE(contains(error_of(with_settings("v = { model.no_such = 3 }\n")), "settings.v"));
  EXPECT_TRUE(contains(error_of(with_settings("v = { train.steps = -5 }\n")), "settings.v"));
  EXPECT_TRUE(contains(error_of(with_settings("v = {}\n")), "expected the keys it changes"));
  EXPECT_TRUE(contains(error_of(with_settings("v = 3\n")), "expected the keys it changes"));
  EXPECT_TRUE(contains(error_of(with_settings("v = { data.vocab_size = [1, 2] }\n")), "scalar keys"));
  EXPECT_TRUE(contains(error_of(with_settings("a = { data.vocab_size = 32 }\nb = { data.vocab_size = 32 }\n")),
                       "the same changes as another setting"));
}

// What `run --set` does (plugins/mixer_options.cpp apply_sets): each
// assignment applied, then the whole compared with the settings.
Manifest with_sets(const std::vector<std::string>& sets, std::vector<std::string>* overrides) {
  Manifest m = parse_manifest(with_settings(kTwo), "s.toml");
  for (const auto& s : sets) apply_override(m, s);
  settle_setting(m);
  *overrides = m.overrides;
  return m;
}

TEST(ManifestSettings, ExactlyOneSettingsChangesStandOnItAndAnythingElseIsAnOverride) {
  std::vector<std::string> overrides;
  Manifest m = with_sets({"data.num_train_examples=800", "train.steps=500", "train.weight_decay=0.1"}, &overrides);
  EXPECT_TRUE(overrides.empty());  // a setting and a grid point: the protocol's own
  EXPECT_TRUE(m.overrides.empty());
  EXPECT_EQ(m.setting, "num_train_examples-800");
  EXPECT_EQ(m.train.steps, 500);
  // Part of a setting, or other values: overrides (the run is open), at no setting.
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"data.num_train_examples=800"}, {"data.vocab_size=64"}, {"data.num_train_examples=800", "train.steps=400"}}) {
    overrides.clear();
    const Manifest o = with_sets(sets, &overrides);
    EXPECT_EQ(o.setting, "") << sets[0];
    EXPECT_EQ(overrides.size(), sets.size()) << sets[0];
  }
  // A setting and more: at that setting, the rest an override (open).
  overrides.clear();
  const Manifest more = with_sets({"train.steps=500", "data.vocab_size=32"}, &overrides);
  EXPECT_EQ(more.setting, "vocab_size-32");
  EXPECT_EQ(overrides, std::vector<std::string>{"train.steps=500"});
  // The value as the manifest holds it, not as typed.
  overrides.clear();
  EXPECT_EQ(with_sets({"data.vocab_size=32"}, &overrides).setting, "vocab_size-32");
}

TEST(ManifestSettings, TravelInTheConfigurationAndBack) {
  std::vector<std::string> overrides;
  const Manifest m = with_sets({"data.vocab_size=32"}, &overrides);
  const auto j = to_json(m);
  EXPECT_EQ(j["setting"], "vocab_size-32");
  EXPECT_EQ(j["settings"]["num_train_examples-800"]["train.steps"], 500);
  const Manifest back = config_manifest(j, "mad_recall", "result.json");
  EXPECT_EQ(back.setting, "vocab_size-32");
  EXPECT_EQ(to_json(back), j);
  // Without settings the configuration has neither key: older results hash as before.
  const auto plain = to_json(load_preset("mad_recall", "smoke"));
  EXPECT_FALSE(plain.contains("settings"));
  EXPECT_FALSE(plain.contains("setting"));
  auto bad = j;
  bad["setting"] = "vocab_size-4096";
  EXPECT_THROW(config_manifest(bad, "mad_recall", "result.json"), lra::Error);
  bad = j;
  bad.erase("setting");
  EXPECT_THROW(config_manifest(bad, "mad_recall", "result.json"), lra::Error);
}

TEST(ManifestSettings, AtSettingAppliesItsChangesWithoutOverrides) {
  const Manifest m = parse_manifest(with_settings(kTwo), "s.toml");
  const Manifest at = at_setting(m, "num_train_examples-800");
  EXPECT_EQ(at.setting, "num_train_examples-800");
  EXPECT_EQ(at.train.steps, 500);
  EXPECT_TRUE(at.overrides.empty());
  EXPECT_EQ(at_setting(m, "baseline").train.steps, m.train.steps);
  EXPECT_THROW(at_setting(m, "nope"), lra::Error);
}

// mad-v1: MAD's 66 difficulty settings (configs/tasks/*.yml), each task's
// baseline plus one change at a time; 200 epochs of each setting's data.
TEST(ManifestSettings, MadV1StatesMadsSixtySixSettings) {
  const std::map<std::string, size_t> want = {{"mad_recall", 11},        {"mad_fuzzy_recall", 11},
                                              {"mad_noisy_recall", 14},  {"mad_selective_copy", 13},
                                              {"mad_compression", 11},   {"mad_memorization", 6}};
  size_t total = 0;
  for (const auto& [task, n] : want) {
    const Manifest m = load_preset(task, "official");
    EXPECT_EQ(m.settings.size() + 1, n) << task;
    total += m.settings.size() + 1;
    ASSERT_EQ(m.grid.size(), 2u) << task;
    EXPECT_EQ(m.grid[0].values, (std::vector<double>{1e-4, 5e-4, 1e-3})) << task;
    EXPECT_EQ(m.grid[1].values, (std::vector<double>{0.0, 0.1})) << task;
    for (const auto& s : m.settings) {
      const Manifest at = at_setting(m, s.name);
      // 200 epochs at batch 128, the last batch of an epoch counted (MAD's DataLoader keeps it).
      const int64_t n_train = std::get<int64_t>(at.data.at("num_train_examples"));
      EXPECT_EQ(at.train.steps, 200 * ((n_train + 127) / 128)) << task << " " << s.name;
    }
  }
  EXPECT_EQ(total, 66u);
}

}  // namespace
}  // namespace lra::host
