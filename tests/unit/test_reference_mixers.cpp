// reference/reference_mixers.h and plugins/mixer_options.h: the LRA reference
// settings table of the built-in mixers — parsed and checked, complete for
// every mixer and task, accepted by the real plugins, inside LRA's 10%
// parameter budget under every official and smoke manifest (built on CPU and
// counted as `run` does), --set on top of it, and nothing for a plugin that
// is not the host's own.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/task_shape.h"
#include "plugins/mixer_options.h"
#include "plugins/mixer_factory.h"
#include "common/sha256.h"
#include "lra/status.h"
#include "manifest/embedded.h"
#include "manifest/presets.h"
#include "manifest/suites.h"
#include "model/backbone.h"
#include "plugins/loader.h"
#include "reference/reference_mixers.h"
#include "rules/rules.h"

using nlohmann::json;
using namespace lra::host;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kMixers = {"transformer", "local",  "sparse_transformer", "longformer",
                                          "linformer",   "reformer", "sinkhorn",         "synthesizer",
                                          "bigbird",     "linear_transformer", "performer"};
const std::vector<std::string> kTasks = {"listops", "text", "retrieval", "image", "pathfinder", "pathx"};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const LoadedPlugin& builtin(const std::string& name) { return open_plugin(name, LRA_KIND_MIXER); }

struct Count {
  int64_t total, reference, budget;
};

// The model `run` builds for this manifest and options, counted.
Count count(const Manifest& m, const LoadedPlugin& plugin, const lra::Params& options) {
  const TaskShape t = lra_task_shape(m.task);
  const BackboneSpec spec{m.model, t.vocab_size, t.num_classes, 0, t.paired};
  torch::NoGradGuard g;
  const int64_t reference = count_parameters(*Classifier(spec, make_reference_attention));
  const int64_t total = count_parameters(*Classifier(spec, plugin_mixer_factory(plugin, options)));
  return {total, reference, compute_param_budget(reference, m.rules.param_budget_ratio).budget};
}

// Prints the count (the figures the READMEs' budget tables quote) and checks it.
void expect_within_budget(const std::string& name, const std::string& task, const std::string& preset,
                          const Count& c) {
  std::printf("  %-18s %-10s %-8s %11lld params, reference %11lld, budget %11lld (headroom left %lld)\n",
              name.c_str(), task.c_str(), preset.c_str(), static_cast<long long>(c.total),
              static_cast<long long>(c.reference), static_cast<long long>(c.budget),
              static_cast<long long>(c.budget - c.total));
  EXPECT_LE(c.total, c.budget) << "reference Transformer " << c.reference;
}

std::string error_of(const std::string& text) {
  try {
    ReferenceTable::parse(text, "reference-mixers/test.toml");
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::internal);
    return e.what();
  }
  return "";
}

const char* kMinimal = R"(schema = "lrahost.reference-mixers/v1"
name = "reference-mixers/test"
protocol = "lra-v1"
lra_code = "x"
tasks = ["listops", "text"]
[m]
[m.default]
a = { value = 1, source = "models/m.py:1" }
)";

}  // namespace

TEST(ReferenceTable, CoversEveryBuiltinMixerAndTask) {
  const ReferenceTable& t = reference_table();
  EXPECT_EQ(t.file(), "reference-mixers/lra-v1.3.toml");
  EXPECT_EQ(t.protocol(), "lra-v1");
  EXPECT_EQ(t.tasks(), kTasks);
  auto mixers = kMixers;
  std::sort(mixers.begin(), mixers.end());
  EXPECT_EQ(t.mixers(), mixers);
  for (const auto& m : kMixers)
    for (const auto& task : kTasks) EXPECT_TRUE(t.entry(m, task, false)) << m << "/" << task;
  EXPECT_FALSE(t.entry("performer", "forgetting", false)) << "a task the table does not cover has no entry";
  EXPECT_FALSE(t.entry("my_mixer", "listops", false));
  // The compiled-in bytes are the file in the source tree.
  const std::string text = read_file(fs::path(LRA_SOURCE_DIR) / "manifests" / t.file());
  EXPECT_EQ(t.sha256(), sha256_hex(text));
  EXPECT_EQ(find_reference_table(t.file()), &t);
  EXPECT_EQ(find_reference_table("reference-mixers/lra-v9.toml"), nullptr);
}

TEST(ReferenceTable, EverySettingCitesTheLraCode) {
  // "file:line" in lra_benchmarks/ (google-research/long-range-arena at cd31e5c).
  const std::regex cite(R"((models|utils|listops|text_classification|matching|image)/[a-z0-9_/]+\.py:[0-9]+)");
  for (const auto& m : kMixers)
    for (const auto& task : kTasks)
      for (bool smoke : {false, true}) {
        const auto e = reference_table().entry(m, task, smoke);
        ASSERT_TRUE(e);
        for (const auto& [name, s] : e->settings) {
          SCOPED_TRACE(e->label() + " " + name);
          EXPECT_TRUE(std::regex_search(s.source, cite)) << s.source;
          EXPECT_TRUE(s.value.is_primitive() && !s.value.is_null());
        }
      }
}

TEST(ReferenceTable, ResolvesDefaultsTaskAndSmokeOverrides) {
  const ReferenceTable& t = reference_table();
  // performer: generalized ReLU kernel by default, FAVOR+ with 2 redrawn features on ListOps.
  EXPECT_EQ(t.entry("performer", "text", false)->values(),
            json({{"kernel", "relu"}, {"mask_keys", true}, {"nb_features", 0}, {"redraw", 0}}));
  EXPECT_EQ(t.entry("performer", "listops", false)->values(),
            json({{"kernel", "softmax"}, {"mask_keys", true}, {"nb_features", 2}, {"redraw", 1}}));
  // sparse_transformer: the first position is global only under CLS pooling (and Retrieval's first byte).
  for (const auto& task : kTasks)
    EXPECT_EQ(t.entry("sparse_transformer", task, false)->values()["global_tokens"],
              task == "pathfinder" || task == "pathx" ? 0 : 1)
        << task;
  // Block sizes: 50 by default, 64 in the image and Pathfinder configs.
  for (const auto& m : {"local", "sinkhorn"})
    for (const auto& task : kTasks)
      EXPECT_EQ(t.entry(m, task, false)->values()["block_size"],
                task == "image" || task == "pathfinder" || task == "pathx" ? 64 : 50)
          << m << "/" << task;
  // linformer: LRA's learned projection where it fits the budget; the smoke Image override.
  EXPECT_EQ(t.entry("linformer", "image", false)->values()["projection"], "learned");
  EXPECT_EQ(t.entry("linformer", "image", true)->values()["projection"], "fixed");
  EXPECT_EQ(t.entry("linformer", "image", true)->label(), "linformer/smoke/image");
  EXPECT_EQ(t.entry("linformer", "retrieval", false)->values()["projection"], "fixed");
  EXPECT_FALSE(t.entry("linformer", "retrieval", false)->deviations().empty()) << "a deviation is labelled";
  EXPECT_TRUE(t.entry("linformer", "listops", false)->deviations().empty());
  EXPECT_EQ(t.entry("reformer", "listops", false)->values(),
            json({{"n_hashes", 1}, {"n_buckets", 10}, {"n_chunks", 10}, {"attend_across_buckets", true}}));
  EXPECT_TRUE(t.entry("reformer", "listops", false)->not_compared.count("chunk_len")) << "unused with n_chunks";
  EXPECT_TRUE(is_smoke_manifest("smoke/listops"));
  EXPECT_FALSE(is_smoke_manifest("lra-v1/listops"));
}

TEST(ReferenceTable, ComparesRecordedOptions) {
  const auto e = *reference_table().entry("performer", "text", false);
  const json reference = {{"kernel", "relu"}, {"nb_features", 0}, {"redraw", 0}, {"chunk", 64}, {"mask_keys", true}};
  EXPECT_TRUE(reference_differences(e, reference).empty());
  json other_chunk = reference;
  other_chunk["chunk"] = 7;  // compute-only: still the reference
  EXPECT_TRUE(reference_differences(e, other_chunk).empty());
  json changed = reference;
  changed["kernel"] = "softmax";
  changed.erase("redraw");
  changed["extra"] = 1;
  EXPECT_EQ(reference_differences(e, changed), (std::vector<std::string>{"extra", "kernel", "redraw"}));
  // Numbers compare by value (1e-6 recorded as a float either way).
  const auto lt = *reference_table().entry("linear_transformer", "text", false);
  EXPECT_TRUE(reference_differences(lt, json{{"eps", 1e-6}, {"chunk", 64}, {"mask_keys", true}}).empty());
  EXPECT_EQ(reference_differences(lt, json{{"eps", 1e-5}, {"chunk", 64}, {"mask_keys", true}}),
            std::vector<std::string>{"eps"});
  EXPECT_EQ(reference_differences(lt, json{{"eps", 1e-6}, {"chunk", 64}, {"mask_keys", false}}),
            std::vector<std::string>{"mask_keys"})
      << "LRA's unmasked keys are not the closed reference";
}

TEST(ReferenceTable, RejectsMalformedTables) {
  EXPECT_EQ(error_of(kMinimal), "");
  auto with = [](const std::string& from, const std::string& to) {
    std::string s = kMinimal;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_NE(error_of(with("lrahost.reference-mixers/v1", "v0")).find("schema"), std::string::npos);
  EXPECT_NE(error_of(with("name = \"reference-mixers/test\"", "name = \"other\"")).find("name"), std::string::npos);
  const std::string no_source = error_of(with(", source = \"models/m.py:1\"", ""));
  EXPECT_NE(no_source.find("m.default.a.source is missing"), std::string::npos) << no_source;
  EXPECT_NE(no_source.find("line 8"), std::string::npos) << no_source;
  EXPECT_NE(error_of(with("value = 1,", "")).find("m.default.a.value is missing"), std::string::npos);
  EXPECT_NE(error_of(std::string(kMinimal) + "[m.pathx]\na = { value = 2, source = \"s\" }\n").find("m.pathx"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kMinimal) + "[m.text]\nb = { value = 2, source = \"s\" }\n")
                .find("m.text.b is set for some tasks only"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kMinimal) + "[m.smoke.image]\na = { value = 2, source = \"s\" }\n")
                .find("m.smoke.image is not one of the table's tasks"),
            std::string::npos);
  EXPECT_NE(error_of(with("source = ", "sauce = ")).find("not a setting field"), std::string::npos);
  EXPECT_NE(error_of(std::string(kMinimal) + "[n]\nnote = \"no default\"\n").find("n.default is missing"),
            std::string::npos);
  EXPECT_NE(error_of("x = [").find("reference table reference-mixers/test.toml, line 1"), std::string::npos);
}

// Every built-in mixer on every task: the table's options are declared by the
// plugin, accepted by it (create() runs for every layer), and the whole model
// fits LRA's parameter budget under the official and the smoke manifest.
class ReferenceBudget : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceBudget, EveryTaskResolvesAndFitsOfficialAndSmoke) {
  const std::string name = GetParam();
  const LoadedPlugin& plugin = builtin(name);
  ASSERT_TRUE(is_builtin_plugin_file(plugin.descriptor.file)) << plugin.descriptor.file;
  for (const auto& task : kTasks)
    for (const std::string preset : {"official", "smoke"}) {
      SCOPED_TRACE(name + " on " + task + " (" + preset + ")");
      const Manifest m = load_preset(task, preset);
      const RunMixerOptions r = resolve_run_mixer_options(plugin, {}, m);
      const json& rs = r.reference_settings;
      ASSERT_TRUE(rs.is_object());
      EXPECT_EQ(rs["table"], "reference-mixers/lra-v1.3.toml");
      EXPECT_EQ(rs["sha256"], reference_table().sha256());
      EXPECT_EQ(rs["entry"], name + (preset == "smoke" ? "/smoke/" : "/") + task);
      EXPECT_EQ(rs["used"], true);
      EXPECT_TRUE(rs["changed"].empty());
      // The options are the entry's where it speaks, the plugin's defaults elsewhere.
      const auto entry = *reference_table().entry(name, task, preset == "smoke");
      EXPECT_TRUE(reference_differences(entry, params_json(r.options)).empty()) << params_json(r.options).dump();
      EXPECT_EQ(rs["settings"], entry.values());
      expect_within_budget(name, task, preset, count(m, plugin, r.options));
    }
}

INSTANTIATE_TEST_SUITE_P(BuiltinMixers, ReferenceBudget, ::testing::ValuesIn(kMixers),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(ReferenceSettings, TableNamesEveryOptionOfEveryPlugin) {
  // So a recorded option set can always be judged (leaderboard): each declared
  // option is either a reference setting or not compared (compute-only or unused).
  for (const auto& name : kMixers) {
    std::vector<lra::OptionSpec> specs;
    ASSERT_TRUE(builtin(name).mixer().options(&specs).ok());
    for (const auto& task : kTasks) {
      const auto e = *reference_table().entry(name, task, false);
      for (const auto& s : specs)
        EXPECT_TRUE(e.settings.count(s.name) || e.not_compared.count(s.name)) << name << "." << s.name;
    }
  }
}

TEST(ReferenceSettings, EachPluginReadmeListsItsReferenceSettings) {
  // plugins/<name>/README.md documents the table's values beside LRA's file and line.
  for (const auto& name : kMixers) {
    SCOPED_TRACE(name);
    const std::string readme = read_file(fs::path(LRA_SOURCE_DIR) / "plugins" / name / "README.md");
    const auto at = readme.find("## LRA reference settings");
    ASSERT_NE(at, std::string::npos);
    const std::string section = readme.substr(at, readme.find("\n## ", at + 1) - at);
    EXPECT_NE(section.find(fs::path(kReferenceTableFile).filename().string()), std::string::npos);
    for (const auto& task : kTasks) {
      const ReferenceEntry entry = *reference_table().entry(name, task, false);
      for (const auto& [option, s] : entry.settings) {
        EXPECT_NE(section.find("`" + option + "`"), std::string::npos) << option;
        std::string value = s.value.is_string() ? s.value.get<std::string>() : s.value.dump();
        if (const auto e = value.find("e-0"); e != std::string::npos) value.erase(e + 2, 1);  // 1e-06 as 1e-6
        EXPECT_NE(section.find(value), std::string::npos) << option << " = " << value << " on " << task;
        EXPECT_NE(section.find(s.source.substr(0, s.source.find(':'))), std::string::npos) << s.source;
      }
    }
  }
}

TEST(ReferenceSettings, BudgetsThatLraItselfBroke) {
  // The labelled deviations are needed: LRA's own settings are over the budget.
  const Manifest image = load_preset("image", "smoke");
  const LoadedPlugin& linformer = builtin("linformer");
  const auto learned = resolve_run_mixer_options(linformer, {{"projection", "learned"}}, image);
  const Count c = count(image, linformer, learned.options);
  EXPECT_GT(c.total, c.budget) << "a learned projection on the smoke Image backbone";
  EXPECT_EQ(learned.reference_settings["changed"], json({"projection"}));
  const Manifest retrieval = load_preset("retrieval", "official");
  const auto r = resolve_run_mixer_options(linformer, {{"projection", "learned"}}, retrieval);
  const Count cr = count(retrieval, linformer, r.options);
  EXPECT_GT(cr.total, cr.budget);
  const Manifest listops = load_preset("listops", "official");
  const LoadedPlugin& synth = builtin("synthesizer");
  const auto k7 = resolve_run_mixer_options(synth, {{"k", "7"}}, listops);
  const Count ck = count(listops, synth, k7.options);
  EXPECT_GT(ck.total, ck.budget) << "k = 6 is the largest factorized rank on ListOps";
}

TEST(ReferenceSettings, UserSetWinsAndIsRecordedAsChanged) {
  const LoadedPlugin& performer = builtin("performer");
  const Manifest text = load_preset("text", "official");
  const auto r = resolve_run_mixer_options(performer, {{"kernel", "softmax"}, {"chunk", "32"}}, text);
  EXPECT_EQ(std::get<std::string>(r.options.at("kernel")), "softmax");    // --set wins
  EXPECT_EQ(std::get<int64_t>(r.options.at("nb_features")), 0);          // the table
  EXPECT_EQ(std::get<int64_t>(r.options.at("chunk")), 32);
  const json& rs = r.reference_settings;
  EXPECT_EQ(rs["changed"], json({"kernel"})) << "chunk is not a reference setting";
  EXPECT_EQ(rs["applied"], json({"kernel", "nb_features"})) << "redraw 0 is the plugin's default already";
  EXPECT_EQ(rs["used"], false);
  EXPECT_EQ(rs["settings"]["kernel"], "relu");
  const std::string line = describe_reference_settings(rs);
  EXPECT_NE(line.find("performer/text"), std::string::npos) << line;
  EXPECT_NE(line.find("changed by --set: kernel"), std::string::npos) << line;
  // A value the plugin cannot take is the usual error.
  EXPECT_THROW(resolve_run_mixer_options(performer, {{"nb_features", "many"}}, text), lra::Error);
}

TEST(ReferenceSettings, TaskWithoutEntryKeepsThePluginDefaults) {
  Manifest mine = load_preset("text", "official");
  mine.task = "my_task";
  mine.name = "mine/my_task";
  const auto r = resolve_run_mixer_options(builtin("performer"), {}, mine);
  EXPECT_EQ(std::get<std::string>(r.options.at("kernel")), "softmax");
  EXPECT_TRUE(r.reference_settings["entry"].is_null());
  EXPECT_EQ(r.reference_settings["used"], false);
}

TEST(ReferenceSettings, AnotherCopyOfABuiltinIsThirdParty) {
  // The same bytes, loaded from elsewhere, are not the host's own plugin.
  const fs::path dir = fs::temp_directory_path() / ("lrahost-reference-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path copy = dir / "lra_mixer_performer.so";
  fs::copy_file(builtin("performer").descriptor.file, copy, fs::copy_options::overwrite_existing);
  const LoadedPlugin& p = open_plugin(copy.string(), LRA_KIND_MIXER);
  EXPECT_EQ(p.descriptor.name, "performer");
  EXPECT_FALSE(is_builtin_plugin_file(p.descriptor.file));
  const auto r = resolve_run_mixer_options(p, {}, load_preset("text", "official"));
  EXPECT_TRUE(r.reference_settings.is_null());
  EXPECT_EQ(std::get<std::string>(r.options.at("kernel")), "softmax") << "the plugin's own default";
  EXPECT_EQ(describe_reference_settings(r.reference_settings), "");
  fs::remove_all(dir);
}

TEST(ReferenceSettings, FixturePluginGetsNone) {
  const LoadedPlugin& p = open_plugin(std::string(LRA_FIXTURE_PLUGIN_DIR) + "/fixture_ballast.so", LRA_KIND_MIXER);
  const auto r = resolve_run_mixer_options(p, {{"ballast", "0"}}, load_preset("listops", "official"));
  EXPECT_TRUE(r.reference_settings.is_null());
  EXPECT_EQ(std::get<int64_t>(r.options.at("ballast")), 0);
}

// Released with lra-v1.2 and frozen like the official manifests
// (docs/releases.md): results name it by this hash in
// plugin.reference_settings.sha256, and the leaderboard compares their
// options with it. A change is a new file (reference-mixers/lra-v2.toml), not
// an edit of this one.
TEST(ReferenceTable, ReleasedBytesArePinned) {
  const ReferenceTable* v1 = find_reference_table("reference-mixers/lra-v1.toml");
  ASSERT_NE(v1, nullptr) << "a released table stays compiled in: results name it";
  EXPECT_EQ(v1->sha256(), "91a445510301325df26a227d956ef1fe295128c7e2767d84b7fa6e6f997c019b")
      << "manifests/reference-mixers/lra-v1.toml was edited after its release";
}

// Released with this host's first reference configuration: the second table
// (mask_keys) and the LRA Table 1 configuration 1.0 are frozen the same way,
// and so are the third table (mask_queries) and the configuration 1.1.
TEST(ReferenceTable, LaterTablesAndTheTable1ConfigurationsArePinned) {
  const ReferenceTable* v11 = find_reference_table("reference-mixers/lra-v1.1.toml");
  ASSERT_NE(v11, nullptr) << "a released table stays compiled in: results name it";
  EXPECT_EQ(v11->sha256(), "d04c74b42651b4daa8135c63e3b4e7fcf0ee3a455b49c7afae59d554f279131b")
      << "manifests/reference-mixers/lra-v1.1.toml was edited after its release: make a new file";
  EXPECT_EQ(reference_configuration("table1.0").file(), "reference-configurations/lra-table1.toml");
  EXPECT_EQ(reference_configuration("table1.0").sha256(),
            "d3885eeab9375254b72d19f35347649535343a0869d64947751bc49e929d585b")
      << "manifests/reference-configurations/lra-table1.toml was edited after its release: make a new file";
  const ReferenceTable* v12 = find_reference_table("reference-mixers/lra-v1.2.toml");
  ASSERT_NE(v12, nullptr) << "a released table stays compiled in: results name it";
  EXPECT_EQ(v12->sha256(), "1e564e00730847de0885953653e3bc018707095f81d2e3b9587490a18fcbc063")
      << "manifests/reference-mixers/lra-v1.2.toml was edited after its release: make a new file";
  EXPECT_EQ(reference_table().file(), "reference-mixers/lra-v1.3.toml");
  EXPECT_EQ(reference_table().sha256(), "09e5adf2da6300b8cb08eb0e63cdb855063aac0766b41d474c90cc80bf514dbd")
      << "manifests/reference-mixers/lra-v1.3.toml was edited after its release: make a new file";
  EXPECT_EQ(reference_configuration("table1").file(), "reference-configurations/lra-table1.2.toml");
  EXPECT_EQ(reference_configuration("table1.2").sha256(), "d5ba9960aa4ca25b2bd040fab9a44e5670cb7e7859dff874769c3e516774e831")
      << "manifests/reference-configurations/lra-table1.2.toml was edited after its release: make a new file";
  EXPECT_EQ(reference_configuration("table1.1").sha256(), "1bbf4149590be633c3af9a43dd2b4d0595513d08009f98000865ea84aa450527")
      << "manifests/reference-configurations/lra-table1.1.toml was edited after its release: make a new file";
}

// A result from before mask_queries existed keeps being compared with the
// table it names (lra-v1.1): its options equal that entry; against the
// current table the missing option is the difference.
TEST(ReferenceTable, ResultsUnderTheSecondTableKeepTheirEntries) {
  const ReferenceTable* v11 = find_reference_table("reference-mixers/lra-v1.1.toml");
  ASSERT_NE(v11, nullptr);
  const json before = {{"block_size", 50}};
  EXPECT_TRUE(reference_differences(*v11->entry("local", "listops", false), before).empty());
  const ReferenceTable& v12 = reference_table_named("");  // what a manifest naming no table runs with
  EXPECT_EQ(v12.file(), "reference-mixers/lra-v1.2.toml");
  EXPECT_EQ(reference_differences(*v12.entry("local", "listops", false), before),
            std::vector<std::string>{"mask_queries"});
  EXPECT_TRUE(reference_differences(*v12.entry("local", "listops", false), {{"block_size", 50}, {"mask_queries", false}})
                  .empty());
}

// Release lra-v1.3's table adopts LRA's masked query rows in the closed
// division: the six mixers that have the option set it on every task, and
// nothing else differs from lra-v1.2's table.
TEST(ReferenceTable, TheFourthTableAdoptsLrasMaskedQueryRowsAndNothingElse) {
  const ReferenceTable& v13 = reference_table();
  const ReferenceTable& v12 = reference_table_named("");
  EXPECT_EQ(v13.mixers(), v12.mixers());
  EXPECT_FALSE(v13.is_configuration());
  const std::set<std::string> masking = {"bigbird", "local", "longformer", "sinkhorn", "sparse_transformer", "synthesizer"};
  for (const auto& mixer : v13.mixers())
    for (const auto& task : kTasks)
      for (const bool smoke : {false, true}) {
        SCOPED_TRACE(mixer + "/" + task + (smoke ? " (smoke)" : ""));
        json now = v13.entry(mixer, task, smoke)->values();
        json before = v12.entry(mixer, task, smoke)->values();
        if (masking.count(mixer)) {
          EXPECT_EQ(now["mask_queries"], true);
          EXPECT_EQ(before["mask_queries"], false);
          now.erase("mask_queries");
          before.erase("mask_queries");
        } else {
          EXPECT_FALSE(now.contains("mask_queries"));
        }
        EXPECT_EQ(now, before);
        EXPECT_TRUE(v13.entry(mixer, task, smoke)->deviations().size() <= v12.entry(mixer, task, smoke)->deviations().size());
      }
}

// A run applies the table its manifest names: lra-v1.3's manifests name the
// fourth table; lra-v1.2's released bytes name none and keep running as they
// did (a closed run under an earlier release stays that release's run).
TEST(ReferenceSettings, TheManifestNamesTheTableARunApplies) {
  const LoadedPlugin& local = builtin("local");
  const Manifest now = load_preset("pathfinder", "official");
  EXPECT_EQ(now.rules.reference_settings, kReferenceTableFile);
  const auto r13 = resolve_run_mixer_options(local, {}, now);
  EXPECT_EQ(std::get<bool>(r13.options.at("mask_queries")), true);
  EXPECT_EQ(r13.reference_settings["table"], kReferenceTableFile);
  EXPECT_EQ(r13.reference_settings["applied"], json({"block_size", "mask_queries"}));
  const EmbeddedFile* released = find_embedded("released/lra-v1.2/pathfinder.toml");
  ASSERT_NE(released, nullptr);
  const Manifest v12 = parse_manifest(released->text, "builtin:released/lra-v1.2/pathfinder.toml");
  EXPECT_EQ(v12.rules.reference_settings, "");
  EXPECT_FALSE(to_json(v12)["rules"].contains("reference_settings")) << "older configurations keep their keys";
  const auto r12 = resolve_run_mixer_options(local, {}, v12);
  EXPECT_EQ(std::get<bool>(r12.options.at("mask_queries")), false);
  EXPECT_EQ(r12.reference_settings["table"], kTableOfManifestsWithoutKey);
  EXPECT_EQ(r12.reference_settings["used"], true);
  // --set rules.reference_settings picks another table (and makes the run open, as any --set).
  Manifest set = now;
  apply_override(set, std::string("rules.reference_settings=") + kTableOfManifestsWithoutKey);
  EXPECT_EQ(std::get<bool>(resolve_run_mixer_options(local, {}, set).options.at("mask_queries")), false);
  // Every working manifest of the LRA protocols, official and smoke, names the newest table. (The
  // causal LM of `forget` and the recall tasks such as mqar have no LRA entry: no LRA official manifest.)
  for (const std::string protocol : {"scratch", "spt"}) {
    const auto lra_tasks = suite_tasks(find_suite("lra"));
    for (const std::string preset : {"official", "smoke"})
      for (const auto& task : preset_tasks(preset, protocol))
        if (std::find(lra_tasks.begin(), lra_tasks.end(), task) != lra_tasks.end() && task != "forgetting")
          EXPECT_EQ(load_preset(task, preset, protocol).rules.reference_settings, kReferenceTableFile)
            << preset << "/" << protocol << "/" << task;
  }
}

// A name that is not a settings table is refused where the manifest is read
// (exit 4 naming the key, the value and the tables there are).
TEST(ReferenceSettings, AManifestNamingNoSuchTableIsRefused) {
  const std::string text(find_embedded("lra-v1/listops.toml")->text);
  for (const std::string bad : {"reference-mixers/lra-v9.toml", "reference-configurations/lra-table1.2.toml"}) {
    SCOPED_TRACE(bad);
    std::string edited = text;
    const std::string from = std::string("\"") + kReferenceTableFile + "\"";
    edited.replace(edited.find(from), from.size(), "\"" + bad + "\"");
    try {
      parse_manifest(edited, "mine.toml");
      ADD_FAILURE() << "accepted rules.reference_settings = " << bad;
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::rules);
      const std::string what = e.what();
      EXPECT_NE(what.find("mine.toml"), std::string::npos) << what;
      EXPECT_NE(what.find("rules.reference_settings"), std::string::npos) << what;
      EXPECT_NE(what.find(kReferenceTableFile), std::string::npos) << "lists the tables there are: " << what;
    }
  }
  Manifest m = load_preset("listops", "official");
  EXPECT_THROW(apply_override(m, "rules.reference_settings=reference-mixers/lra-v9.toml"), lra::Error);
  EXPECT_EQ(m.rules.reference_settings, kReferenceTableFile) << "left unchanged";
}

// An old result, from before mask_keys existed, keeps being compared with the
// table it names: its options equal that table's entry, not the current one's.
TEST(ReferenceTable, ResultsUnderTheFirstTableKeepTheirEntries) {
  const ReferenceTable* v1 = find_reference_table("reference-mixers/lra-v1.toml");
  ASSERT_NE(v1, nullptr);
  const json old_options = {{"k", 16}, {"share_kv", true}, {"projection", "learned"}};
  EXPECT_TRUE(reference_differences(*v1->entry("linformer", "listops", false), old_options).empty());
  EXPECT_EQ(reference_differences(*reference_table().entry("linformer", "listops", false), old_options),
            std::vector<std::string>{"mask_keys"});
}

// The built-in mixers that are not in LRA (state-space models) have no entry:
// `run` uses their defaults, records no reference settings, and those
// defaults fit the budget on every task, official and smoke.
class NonLraBudget : public ::testing::TestWithParam<std::string> {};

TEST_P(NonLraBudget, DefaultsFitEveryTaskWithoutAReferenceEntry) {
  const std::string name = GetParam();
  const LoadedPlugin& plugin = builtin(name);
  ASSERT_TRUE(is_builtin_plugin_file(plugin.descriptor.file)) << plugin.descriptor.file;
  EXPECT_FALSE(reference_table().has_mixer(name));
  for (const auto& task : kTasks)
    for (const std::string preset : {"official", "smoke"}) {
      SCOPED_TRACE(name + " on " + task + " (" + preset + ")");
      const Manifest m = load_preset(task, preset);
      const RunMixerOptions r = resolve_run_mixer_options(plugin, {}, m);
      EXPECT_TRUE(r.reference_settings.is_null());
      EXPECT_EQ(params_json(r.options), params_json(resolve_mixer_options(plugin, {})));
      expect_within_budget(name, task, preset, count(m, plugin, r.options));
    }
}

INSTANTIATE_TEST_SUITE_P(StateSpaceMixers, NonLraBudget, ::testing::Values("s4d", "mamba2"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });
