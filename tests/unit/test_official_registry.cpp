// The division of a run from its manifest bytes against the release registry:
// any released official manifest is closed and named; anything else is open,
// compared with the current release.
#include <gtest/gtest.h>

#include <string>

#include <torch/utils.h>
#include <torch/types.h>

#include "runs/official_registry.h"
#include "results/closed_checks.h"
#include "manifest/embedded.h"
#include "manifest/presets.h"
#include "manifest/releases.h"

using namespace lra::host;

namespace {

std::string embedded_text(const std::string& name) {
  const EmbeddedFile* f = find_embedded(name);
  if (!f) ADD_FAILURE() << name << " is not embedded";
  return f ? std::string(f->text) : std::string();
}


}  // namespace

TEST(OfficialRegistry, AnyReleasedManifestIsClosedAndNamed) {
  std::optional<ReleasedManifest> release;
  RunChoices c = run_choices("pathfinder", "manifest old.toml", embedded_text("released/lra-v1.1/pathfinder.toml"), &release);
  ASSERT_TRUE(release.has_value());
  EXPECT_EQ(release->version, "lra-v1.1");
  EXPECT_EQ(release->superseded_by, "lra-v1.3");
  EXPECT_EQ(classify_run(c).name, "closed");

  c = run_choices("pathfinder", "preset 'official'", std::string(find_official("pathfinder")->text), &release);
  ASSERT_TRUE(release.has_value());
  EXPECT_EQ(release->version, "lra-v1.3");
  EXPECT_TRUE(release->current);
  EXPECT_EQ(classify_run(c).name, "closed");
}

TEST(OfficialRegistry, OtherBytesAreOpenAgainstTheCurrentRelease) {
  std::optional<ReleasedManifest> release;
  std::string edited = std::string(find_official("image")->text) + "\n# a comment is an edit too\n";
  const RunChoices c = run_choices("image", "manifest mine.toml", edited, &release);
  EXPECT_FALSE(release.has_value());
  const RunDivision d = classify_run(c);
  EXPECT_EQ(d.name, "open");
  ASSERT_EQ(d.reasons.size(), 1u);
  EXPECT_NE(d.reasons[0].find("released/lra-v1.3/image.toml (release lra-v1.3)"), std::string::npos) << d.reasons[0];
  // A released manifest of another task is not this task's.
  run_choices("image", "manifest x.toml", std::string(find_official("pathx")->text), &release);
  EXPECT_FALSE(release.has_value());
}

TEST(OfficialRegistry, VerifyLookupAndSeedsFollowTheRegistry) {
  const auto listops = registry_official("listops");
  ASSERT_EQ(listops.size(), 6u);  // lra-v1.0, 1.1, 1.2, lra-spt-v1.0 (another protocol), lra-v1.3, lra-spt-v1.1
  EXPECT_EQ(listops[3].release, "lra-spt-v1.0");
  EXPECT_EQ(listops[3].protocol, "lra-spt-v1");
  EXPECT_EQ(listops[3].superseded_by, "lra-spt-v1.1");
  EXPECT_EQ(listops[2].protocol, "lra-v1");
  EXPECT_EQ(listops[0].release, "lra-v1.0");
  EXPECT_EQ(listops[0].superseded_by, "lra-v1.3");
  EXPECT_EQ(listops[1].release, "lra-v1.1");
  EXPECT_EQ(listops[1].superseded_by, "lra-v1.3");  // its bytes were carried unchanged into lra-v1.2
  EXPECT_EQ(listops[4].release, "lra-v1.3");
  EXPECT_EQ(listops[4].superseded_by, "");
  EXPECT_EQ(listops[5].release, "lra-spt-v1.1");
  EXPECT_EQ(listops[5].protocol, "lra-spt-v1");
  EXPECT_EQ(listops[5].superseded_by, "");
  EXPECT_TRUE(registry_official("my-task").empty());
  EXPECT_EQ(registry_trial_seeds("listops", listops[0].sha256), std::vector<int64_t>{0});
  EXPECT_EQ(registry_trial_seeds("listops", ""), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_FALSE(registry_trial_seeds("listops", std::string(64, '0')).has_value());
}

// Issue 31: the base of a closed result's budget is counted by the host from
// each released manifest, never read from the file. The ListOps figure is the
// one test_backbone.cpp derives from LRA's architecture; every LRA release has
// a count, the forgetting protocol (no classifier) none; counting leaves the
// global random stream where it was.
TEST(OfficialRegistry, EveryLraReleaseCarriesItsReferenceTransformerCount) {
  for (const auto& r : released_manifests()) {
    for (const auto& m : registry_official(r.task)) {
      if (m.sha256 != r.sha256) continue;
      if (r.protocol == "lra-v1" || r.protocol == "lra-spt-v1")  // both fine-tune LRA's classifier
        EXPECT_GT(m.reference_params, 0) << r.version << " " << r.task;
      else
        EXPECT_EQ(m.reference_params, -1) << r.version << " " << r.task;
    }
  }
  for (const auto& m : registry_official("listops")) EXPECT_EQ(m.reference_params, 8948746) << m.release;
  torch::manual_seed(11);
  const auto expected = torch::rand({4});
  torch::manual_seed(11);
  (void)registry_official("text");
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));
}

// zoology-v1: a closed result may stand on any point of the released grid
// (width x learning rate), and its budget's base is the reference Transformer
// of that point, counted by the host on the shape the official-data row states.
TEST(OfficialRegistry, AGridProtocolLetsEachPointBeClosedAndCountsItsReference) {
  const auto zoology = registry_official("mqar");
  ASSERT_EQ(zoology.size(), 1u);
  const auto& official = zoology[0];
  EXPECT_EQ(official.protocol, "zoology-v1");
  EXPECT_EQ(official.reference_params, -1);
  ASSERT_TRUE(static_cast<bool>(official.reference_params_at));
  EXPECT_EQ(official.test_examples, 7000);

  auto result_at = [&](int64_t width, double lr) {
    nlohmann::json config = official.config;
    config["model"]["d_model"] = width;
    config["train"]["lr"] = lr;
    return nlohmann::json{{"seed", 0},
                          {"config", config},
                          {"task", {{"name", "mqar"},
                                    {"examples", {{"train", 180000}, {"val", 1400}, {"test", 7000}}},
                                    {"data_fingerprint", official.data_fingerprint}}},
                          {"rules", {{"reference_params", official.reference_params_at(config)},
                                     {"param_budget_ratio", 1.5}}}};
  };
  const int64_t at64 = official.reference_params_at(result_at(64, 0.001)["config"]);
  const int64_t at128 = official.reference_params_at(result_at(128, 0.001)["config"]);
  // Embedding and head (8,192 x d each), the conv block and the attention block grow with d.
  EXPECT_GT(at64, 2 * 8192 * 64);
  EXPECT_GT(at128, at64);
  std::vector<std::string> why;
  EXPECT_TRUE(check_closed_against_protocol(result_at(128, 0.01), official, &why)) << why.front();
  EXPECT_TRUE(check_closed_against_protocol(result_at(256, 0.03162277660168379), official, &why));
  // Off the grid: not the protocol.
  why.clear();
  EXPECT_FALSE(check_closed_against_protocol(result_at(96, 0.01), official, &why));
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why.front().find("config.model.d_model is 96, the official manifest says 64"), std::string::npos) << why.front();
  why.clear();
  EXPECT_FALSE(check_closed_against_protocol(result_at(128, 0.02), official, &why));
  // A point's budget cannot be enlarged by claiming another point's reference.
  nlohmann::json forged = result_at(64, 0.01);
  forged["rules"]["reference_params"] = at128;
  why.clear();
  EXPECT_FALSE(check_closed_against_protocol(forged, official, &why));
  EXPECT_NE(why.back().find("rules.reference_params is " + std::to_string(at128)), std::string::npos) << why.back();
}

// mad-v1: a closed result may stand on any of the released [settings] (MAD's
// difficulty settings) at any grid point; its data are that setting's own
// official data, and its budget's base the reference Transformer on that
// setting's shape (a larger vocabulary: a larger embedding and head).
TEST(OfficialRegistry, ASettingsProtocolLetsEachSettingBeClosedOnItsOwnData) {
  const auto mad = registry_official("mad_recall");
  ASSERT_EQ(mad.size(), 1u);
  const auto& official = mad[0];
  EXPECT_EQ(official.protocol, "mad-v1");
  ASSERT_TRUE(static_cast<bool>(official.reference_params_at));
  // Every setting has its own row, and the rows differ from the baseline's.
  ASSERT_EQ(official.setting_data.size(), 10u);
  for (const auto& [name, data] : official.setting_data) {
    EXPECT_NE(data.data_fingerprint, official.data_fingerprint) << name;
    EXPECT_EQ(data.test_examples, 1280) << name;
  }

  auto result_at = [&](const std::string& setting, double lr) {
    nlohmann::json config = official.config;
    config["train"]["lr"] = lr;
    OfficialManifest::SettingData data{official.train_examples, official.val_examples, official.test_examples,
                                       official.data_fingerprint};
    if (setting != "baseline") {
      for (const auto& [key, value] : config["settings"][setting].items())
        config[key.substr(0, key.find('.'))][key.substr(key.find('.') + 1)] = value;
      data = official.setting_data.at(setting);
    }
    config["setting"] = setting;
    return nlohmann::json{{"seed", 0},
                          {"config", config},
                          {"task", {{"name", "mad_recall"},
                                    {"examples", {{"train", data.train_examples}, {"val", data.val_examples},
                                                  {"test", data.test_examples}}},
                                    {"data_fingerprint", data.data_fingerprint}}},
                          {"rules", {{"reference_params", official.reference_params_at(config)},
                                     {"param_budget_ratio", 2.0}}}};
  };
  std::vector<std::string> why;
  for (const char* setting : {"baseline", "vocab_size-128", "seq_len-1024", "num_train_examples-800"}) {
    why.clear();
    EXPECT_TRUE(check_closed_against_protocol(result_at(setting, 0.001), official, &why))
        << setting << ": " << (why.empty() ? "" : why.front());
  }
  const int64_t base = official.reference_params_at(result_at("baseline", 0.001)["config"]);
  EXPECT_GT(official.reference_params_at(result_at("vocab_size-128", 0.001)["config"]), base);

  // A setting's changes without its name, its name on the baseline's data, or another value: not the protocol.
  nlohmann::json unnamed = result_at("vocab_size-128", 0.001);
  unnamed["config"]["setting"] = "baseline";
  why.clear();
  EXPECT_FALSE(check_closed_against_protocol(unnamed, official, &why));
  nlohmann::json other_data = result_at("vocab_size-128", 0.001);
  other_data["task"]["data_fingerprint"] = official.data_fingerprint;
  why.clear();
  EXPECT_FALSE(check_closed_against_protocol(other_data, official, &why));
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why.back().find("task.data_fingerprint"), std::string::npos) << why.back();
  nlohmann::json off = result_at("vocab_size-128", 0.001);
  off["config"]["data"]["vocab_size"] = 96;
  why.clear();
  EXPECT_FALSE(check_closed_against_protocol(off, official, &why));
  nlohmann::json fewer_steps = result_at("num_train_examples-800", 0.001);
  fewer_steps["config"]["train"]["steps"] = 700;
  why.clear();
  EXPECT_FALSE(check_closed_against_protocol(fewer_steps, official, &why));
  nlohmann::json unknown = result_at("baseline", 0.001);
  unknown["config"]["setting"] = "vocab_size-4096";
  why.clear();
  EXPECT_FALSE(check_closed_against_protocol(unknown, official, &why));
}
