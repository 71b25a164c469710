// reference/reference_mixers.h (configurations) and plugins/reference_configuration.h:
// the LRA Table 1 configuration — complete for every built-in mixer and task,
// every setting cited, accepted by every official manifest and by the real
// plugins, every entry's model inside the configuration's lifted budget, the
// recorded `changed` recomputed from what ran, and a malformed configuration
// refused with the key and line.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/task_shape.h"
#include "common/sha256.h"
#include "lra/mixer.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "model/backbone.h"
#include "plugins/conformance.h"
#include "plugins/loader.h"
#include "plugins/mixer_factory.h"
#include "plugins/mixer_options.h"
#include "plugins/reference_configuration.h"
#include "reference/reference_mixers.h"
#include "rules/rules.h"

using nlohmann::json;
using namespace lra::host;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kMixers = {"bigbird",   "linear_transformer", "linformer",          "local",
                                          "longformer", "performer",         "reformer",           "sinkhorn",
                                          "sparse_transformer", "synthesizer", "transformer"};
const std::vector<std::string> kTasks = {"listops", "text", "retrieval", "image", "pathfinder", "pathx"};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const ReferenceTable& table1() { return reference_configuration("table1"); }

// What `run --reference table1 --plugin MIXER --task TASK` resolves, before any data.
struct Resolved {
  Manifest manifest;
  ReferenceConfigurationRun configuration;
  lra::Params options;
};

Resolved resolve(const std::string& mixer, const std::string& task) {
  Resolved r;
  r.manifest = load_preset(task, "official");
  std::vector<std::string> overrides;
  const LoadedPlugin& plugin = open_plugin(mixer, LRA_KIND_MIXER);
  r.configuration = apply_reference_configuration("table1", plugin, task, r.manifest, &overrides);
  EXPECT_EQ(overrides, r.configuration.manifest_overrides);
  r.options = resolve_run_mixer_options(plugin, with_configuration_options(r.configuration, {}), r.manifest)
                  .options;
  return r;
}

std::string configuration_error(const std::string& text) {
  try {
    ReferenceTable::parse(text, "reference-configurations/lra-test.toml");
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::internal);
    return e.what();
  }
  return "";
}

const char* kMinimal = R"(schema = "lrahost.reference-configuration/v1"
name = "reference-configurations/lra-test"
label = "A test configuration"
protocol = "lra-v1"
lra_code = "x"
tasks = ["listops", "image"]
[every_mixer]
"rules.param_budget_ratio" = { value = 2.0, source = "README.md" }
[m]
conformance_not_checked = ["padding_mask"]
[m.default]
"mixer.a" = { value = 1, source = "models/m.py:1" }
[m.image]
"model.heads" = { value = 2, source = "image/configs/cifar10/m_base.py:3" }
)";

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

}  // namespace

TEST(ReferenceConfiguration, Table1CoversEveryBuiltinMixerAndTask) {
  const ReferenceTable& t = table1();
  EXPECT_TRUE(t.is_configuration());
  EXPECT_EQ(t.label(), "LRA Table 1 configuration 1.2");
  EXPECT_EQ(t.file(), "reference-configurations/lra-table1.2.toml");
  EXPECT_EQ(t.protocol(), "lra-v1");
  EXPECT_EQ(t.tasks(), kTasks);
  EXPECT_EQ(t.mixers(), kMixers);
  for (const auto& m : kMixers)
    for (const auto& task : kTasks) EXPECT_TRUE(t.entry(m, task, false)) << m << "/" << task;
  // The compiled-in bytes are the file in the source tree.
  EXPECT_EQ(t.sha256(), sha256_hex(read_file(fs::path(LRA_SOURCE_DIR) / "manifests" / t.file())));
  const auto names = reference_configuration_names();
  for (const char* n : {"table1", "table1.0", "table1.1", "table1.2"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  // The family name is its newest version; the first stays runnable by its number.
  EXPECT_EQ(&reference_configuration("table1"), &reference_configuration("table1.2"));
  EXPECT_EQ(reference_configuration("table1.1").label(), "LRA Table 1 configuration 1.1");
  EXPECT_EQ(reference_configuration("table1.0").label(), "LRA Table 1 configuration");
  for (const char* bad : {"table1.3", "table1.", "table1.x", "table"}) {
    try {
      reference_configuration(bad);
      ADD_FAILURE() << bad << " must be refused";
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::usage) << bad;
    }
  }
  try {
    reference_configuration("table2");
    ADD_FAILURE() << "an unknown configuration must be refused";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("table1"), std::string::npos) << "the known ones are listed: " << e.what();
  }
  EXPECT_FALSE(reference_table().is_configuration()) << "the closed reference settings are not a configuration";
}

TEST(ReferenceConfiguration, EverySettingCitesItsSource) {
  // An LRA file and line, or (the lifted budget) LRA's README, where the 10% rule is written.
  const std::regex cite(R"(((models|utils|listops|text_classification|matching|image)/[a-z0-9_/]+\.py:[0-9]+)|README\.md)");
  for (const auto& m : kMixers)
    for (const auto& task : kTasks) {
      const ReferenceEntry entry = *table1().entry(m, task, false);
      for (const auto& [key, s] : entry.settings) {
        SCOPED_TRACE(m + "/" + task + " " + key);
        EXPECT_TRUE(std::regex_search(s.source, cite)) << s.source;
        EXPECT_TRUE(s.value.is_primitive() && !s.value.is_null());
      }
    }
}

// The table and the issue agree on what the configuration is: LRA's per-model
// backbones where its configs set them, sinkhorn's MEAN over padding on
// ListOps, and LRA's mixer behaviour where ours was corrected.
TEST(ReferenceConfiguration, Table1HoldsLrasPerModelSettings) {
  const ReferenceTable& t = table1();
  auto value = [&](const std::string& m, const std::string& task, const std::string& key) {
    const auto e = t.entry(m, task, false);
    const auto it = e->settings.find(key);
    return it == e->settings.end() ? json(nullptr) : it->second.value;
  };
  EXPECT_EQ(value("local", "image", "model.heads"), 2);
  EXPECT_EQ(value("local", "image", "model.pooling"), "mean");
  EXPECT_EQ(value("longformer", "image", "model.layers"), 4);
  EXPECT_EQ(value("reformer", "image", "model.layers"), 4);
  EXPECT_EQ(value("reformer", "image", "model.d_model"), 64);
  EXPECT_EQ(value("sinkhorn", "image", "train.weight_decay"), 0.7);
  EXPECT_EQ(value("sinkhorn", "listops", "model.pooling"), "mean_padded");
  for (const auto& task : kTasks) {
    SCOPED_TRACE(task);
    EXPECT_EQ(value("linformer", task, "mixer.projection"), "learned");
    EXPECT_EQ(value("synthesizer", task, "mixer.mode"), "random");
    for (const char* m : {"linformer", "linear_transformer", "performer"}) EXPECT_EQ(value(m, task, "mixer.mask_keys"), false);
    EXPECT_EQ(value("transformer", task, "rules.param_budget_ratio"), 1000.0) << "LRA's code bounds no count";
    EXPECT_EQ(value("transformer", task, "model.layers"), json(nullptr)) << "the closed backbone is the Transformer's";
  }
  for (const auto& m : kMixers)
    for (const char* key : {"model.layers", "model.heads", "model.d_model"})
      EXPECT_EQ(value(m, "pathx", key), json(nullptr)) << m << ": LRA has no per-model Path-X config";
}

// Every entry is something `run` can do: each manifest key is accepted by the
// task's official manifest, each option is one the plugin declares (of its
// type), the resolved run has exactly the entry's values (nothing `changed`),
// and a check the entry skips is one a capability gates.
TEST(ReferenceConfiguration, EveryEntryResolvesOnTheOfficialManifestAndThePlugin) {
  for (const auto& m : kMixers)
    for (const auto& task : kTasks) {
      SCOPED_TRACE(m + "/" + task);
      Resolved r;
      ASSERT_NO_THROW(r = resolve(m, task));
      EXPECT_EQ(configuration_changes(r.configuration.entry, to_json(r.manifest), params_json(r.options)),
                std::vector<std::string>{});
      for (const auto& check : r.configuration.entry.conformance_not_checked) {
        const uint32_t cap = capability_checked_by(check);
        EXPECT_NE(cap, 0u) << check << " is not a capability-gated conformance check";
        EXPECT_NE(open_plugin(m, LRA_KIND_MIXER).descriptor.capabilities & cap, 0u) << m << " does not declare " << check;
      }
    }
}

// LRA's own settings break its 10% rule; the configuration lifts the budget to
// the manifests' maximum ratio, and every entry fits inside it. Dense
// synthesizer tables too big to build here (ListOps, Text, Retrieval, Path-X)
// are counted as the table's size plus the model without it; Image and
// Pathfinder build both ways and check that sum.
TEST(ReferenceConfiguration, EveryEntryFitsTheLiftedBudget) {
  for (const auto& m : kMixers)
    for (const auto& task : kTasks) {
      SCOPED_TRACE(m + "/" + task);
      const Resolved r = resolve(m, task);
      const TaskShape t = lra_task_shape(task);
      const BackboneSpec spec{r.manifest.model, t.vocab_size, t.num_classes, 0, t.paired};
      torch::NoGradGuard g;
      const int64_t reference = count_parameters(*Classifier(spec, make_reference_attention));
      const int64_t budget = param_budget(reference, r.manifest.rules.param_budget_ratio);
      const LoadedPlugin& plugin = open_plugin(m, LRA_KIND_MIXER);
      int64_t total = 0;
      if (m == "synthesizer") {
        lra::Params fixed = r.options;
        fixed["mode"] = std::string("fixed_random");  // the same model without the learned table
        const int64_t without = count_parameters(*Classifier(spec, plugin_mixer_factory(plugin, fixed)));
        const int64_t n = r.manifest.model.max_len + (r.manifest.model.pooling == "cls" ? 1 : 0);
        const int64_t table = r.manifest.model.layers * r.manifest.model.heads * n * n;
        total = without + table;
        if (task == "image" || task == "pathfinder")
          EXPECT_EQ(count_parameters(*Classifier(spec, plugin_mixer_factory(plugin, r.options))), total)
              << "the dense table is layers x heads x L x L";
      } else {
        total = count_parameters(*Classifier(spec, plugin_mixer_factory(plugin, r.options)));
      }
      EXPECT_LE(total, budget) << "reference Transformer " << reference;
    }
}

TEST(ReferenceConfiguration, ChangesAreTheSettingsThatDidNotRun) {
  const ReferenceEntry e = *table1().entry("linformer", "pathfinder", false);
  Resolved r = resolve("linformer", "pathfinder");
  json config = to_json(r.manifest), options = params_json(r.options);
  EXPECT_TRUE(configuration_changes(e, config, options).empty());
  config["model"]["heads"] = 4;        // --set model.heads=4 after the configuration
  options["projection"] = "fixed";     // --set mixer.projection=fixed
  EXPECT_EQ(configuration_changes(e, config, options), (std::vector<std::string>{"mixer.projection", "model.heads"}));
  config["model"].erase("layers");     // a key missing from the record is not the entry's value either
  options.erase("mask_keys");
  EXPECT_EQ(configuration_changes(e, config, options),
            (std::vector<std::string>{"mixer.mask_keys", "mixer.projection", "model.heads", "model.layers"}));
  EXPECT_EQ(configuration_changes(e, json(), json()).size(), e.settings.size());
}

TEST(ReferenceConfiguration, OnlyTheHostsOwnMixersOnItsTasks) {
  Manifest m = load_preset("listops", "official");
  std::vector<std::string> overrides;
  const LoadedPlugin& fixture = open_plugin(std::string(LRA_FIXTURE_PLUGIN_DIR) + "/fixture_ballast.so", LRA_KIND_MIXER);
  try {
    apply_reference_configuration("table1", fixture, "listops", m, &overrides);
    ADD_FAILURE() << "a third-party plugin has no Table 1 entry";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("not one of them"), std::string::npos) << e.what();
  }
  try {
    apply_reference_configuration("table1", open_plugin("s4d", LRA_KIND_MIXER), "listops", m, &overrides);
    ADD_FAILURE() << "s4d is built in but not an LRA model";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
  }
  EXPECT_TRUE(overrides.empty()) << "nothing applied before the refusal";
}

TEST(ReferenceConfiguration, EveryMixerSectionAndCheckListsParse) {
  const ReferenceTable t = ReferenceTable::parse(kMinimal, "reference-configurations/lra-test.toml");
  EXPECT_TRUE(t.is_configuration());
  EXPECT_EQ(t.label(), "A test configuration");
  const auto listops = t.entry("m", "listops", false);
  EXPECT_EQ(listops->values(), json({{"mixer.a", 1}, {"rules.param_budget_ratio", 2.0}}));
  EXPECT_EQ(t.entry("m", "image", false)->values(),
            json({{"mixer.a", 1}, {"model.heads", 2}, {"rules.param_budget_ratio", 2.0}}))
      << "a key set for one task only keeps the manifest's value elsewhere";
  EXPECT_EQ(listops->conformance_not_checked, std::vector<std::string>{"padding_mask"});
  EXPECT_EQ(t.mixers(), std::vector<std::string>{"m"}) << "[every_mixer] is not a mixer";
}

TEST(ReferenceConfiguration, RejectsMalformedConfigurations) {
  const std::string ok = kMinimal;
  EXPECT_EQ(configuration_error(ok), "");
  auto expect = [&](const std::string& text, const std::string& needle) {
    const std::string e = configuration_error(text);
    EXPECT_NE(e.find(needle), std::string::npos) << "error: " << e;
    EXPECT_NE(e.find("line"), std::string::npos) << "names the line: " << e;
  };
  // A setting must name a manifest key or a plugin option.
  expect(replace_once(ok, "\"model.heads\"", "heads"), "m.image.heads");
  expect(replace_once(ok, "\"mixer.a\"", "\"mixer.\""), "mixer.");
  expect(replace_once(ok, "\"rules.param_budget_ratio\"", "\"budget\""), "every_mixer.budget");
  // A configuration names itself.
  EXPECT_NE(configuration_error(replace_once(ok, "label = \"A test configuration\"\n", "")).find("label"),
            std::string::npos);
  // A settings table knows neither [every_mixer] nor conformance exemptions.
  const std::string as_table = replace_once(ok, "lrahost.reference-configuration/v1", "lrahost.reference-mixers/v1");
  EXPECT_NE(configuration_error(as_table), "");
}

// docs/mixers.md's table shows every setting of every entry, as the file has it.
TEST(ReferenceConfiguration, DocsTableShowsEverySetting) {
  const std::string doc = read_file(fs::path(LRA_SOURCE_DIR) / "docs" / "mixers.md");
  const auto at = doc.find("## The LRA Table 1 configuration");
  ASSERT_NE(at, std::string::npos);
  const std::string section = doc.substr(at, doc.find("\n## ", at + 1) - at);
  for (const auto& m : kMixers) {
    std::string rows;  // every table row of this mixer
    for (size_t pos = section.find("\n| " + m + " |"); pos != std::string::npos;
         pos = section.find("\n| " + m + " |", pos + 1))
      rows += section.substr(pos, section.find('\n', pos + 1) - pos);
    ASSERT_FALSE(rows.empty()) << m << " has no row";
    for (const auto& task : kTasks) {
      const ReferenceEntry entry = *table1().entry(m, task, false);
      for (const auto& [key, s] : entry.settings) {
        if (key == "rules.param_budget_ratio") continue;  // every entry's, stated once above the table
        const std::string shown = "`" + key + "` " + s.value.dump();
        EXPECT_NE(rows.find(shown), std::string::npos) << m << "/" << task << ": " << shown;
      }
    }
  }
}

// Issue 46: the configuration 1.1 gives the six mixers whose LRA attention
// masked query rows LRA's rows (mask_queries), and bigbird and reformer no
// attention dropout, on every task; 1.0 set neither.
TEST(ReferenceConfiguration, Table1_1AddsMaskedQueryRowsAndLrasMissingAttentionDropout) {
  for (const auto& task : kTasks) {
    for (const char* m : {"local", "longformer", "sparse_transformer", "sinkhorn", "synthesizer", "bigbird"}) {
      const ReferenceEntry e = *table1().entry(m, task, false);
      ASSERT_TRUE(e.settings.count("mixer.mask_queries")) << m << "/" << task;
      EXPECT_EQ(e.settings.at("mixer.mask_queries").value, true) << m << "/" << task;
      EXPECT_FALSE(reference_configuration("table1.0").entry(m, task, false)->settings.count("mixer.mask_queries"));
    }
    for (const char* m : {"bigbird", "reformer"}) {
      const ReferenceEntry e = *table1().entry(m, task, false);
      ASSERT_TRUE(e.settings.count("model.attention_dropout")) << m << "/" << task;
      EXPECT_EQ(e.settings.at("model.attention_dropout").value, 0.0) << m << "/" << task;
    }
    for (const char* m : {"transformer", "linformer", "performer", "linear_transformer", "reformer"})
      EXPECT_FALSE(table1().entry(m, task, false)->settings.count("mixer.mask_queries")) << m;
  }
}
