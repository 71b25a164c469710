// Sequence tasks (SDK 1.4) end to end through the lrahost binary: the `mqar`
// smoke preset scores positions per cell; the SDK's example task (copy_demo,
// built in tree like a third party's) is checked and learns to copy; a
// classification task built for SDK 1.3 trains unchanged; and the runs a
// sequence task cannot make are refused before anything is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "cli_harness.h"

using lra::test::lrahost;
using lra::test::read_text;
using lra::test::TempDir;
using nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// A folder holding copies of the named fixture task plugins: LRA_PLUGIN_PATH for a run.
std::string plugin_path(const TempDir& dir, std::initializer_list<const char*> fixtures) {
  for (const char* f : fixtures)
    std::filesystem::copy_file(std::filesystem::path(LRA_FIXTURE_PLUGIN_DIR) / (std::string(f) + ".so"),
                               dir.path() / (std::string(f) + ".so"));
  return "LRA_PLUGIN_PATH=" + dir.str();
}

// copy_demo's manifest from docs/writing-a-task.md (its 600 updates cut to `steps`).
std::string copy_manifest(const std::string& pooling = "none", int steps = 300) {
  return "schema = \"lrahost.manifest/v1\"\nname = \"copy-demo\"\ntask = \"copy_demo\"\ndescription = \"copy\"\n"
         "[model]\nlayers = 2\nd_model = 64\nheads = 2\nqkv_dim = 64\nffn_dim = 128\ndropout = 0.0\n"
         "attention_dropout = 0.0\npooling = \"" + pooling + "\"\npositions = \"learned\"\nmax_len = 33\n"
         "[train]\nsteps = " + std::to_string(steps) + "\nbatch_size = 32\nlr = 0.003\n"
         "schedule = \"constant*cosine_decay\"\nwarmup = 0\nsteps_per_cycle = " + std::to_string(steps) +
         "\nweight_decay = 0.0\nbetas = [0.9, 0.999]\neps = 1e-8\ngrad_clip = 0.0\neval_every = 200\n"
         "checkpoint_every = 600\nseed = 0\neval_batch_size = 100\n"
         "[data]\nlength = 16\nsymbols = 8\n[rules]\nparam_budget_ratio = 1.5\n";
}

}  // namespace

TEST(SequenceTask, MqarSmokeScoresPositionsInEveryCell) {
  TempDir dir;
  const auto out = dir.path() / "run";
  auto o = lrahost("run --plugin transformer --task mqar --preset smoke --threads 2 --out " + out.string() +
                   " --set train.steps=40 --set train.eval_every=20 --set data.train_grid=64x4x400,64x8x400");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "scored positions")) << o.output;
  const json r = json::parse(read_text(out / "result.json"));
  const auto& m = r["metrics"];
  EXPECT_EQ(m["scored"], "position");
  EXPECT_EQ(r["model"]["summary"], "every_position");
  ASSERT_EQ(m["test_cells"].size(), 3u);
  int64_t positions = 0;
  const int pairs[3] = {4, 8, 16};
  for (int c = 0; c < 3; ++c) {
    const auto& cell = m["test_cells"][c];
    EXPECT_EQ(cell["name"], "length 64, " + std::to_string(pairs[c]) + " pairs");
    EXPECT_EQ(cell["examples"], 500);
    EXPECT_EQ(cell["positions"], 500 * pairs[c]);  // one scored position per pair
    positions += cell["positions"].get<int64_t>();
    EXPECT_GE(cell["accuracy"].get<double>(), 0.0);
    EXPECT_LE(cell["example_accuracy"].get<double>(), cell["accuracy"].get<double>() + 1e-12);
  }
  EXPECT_EQ(m["test_positions"], positions);
  EXPECT_EQ(r["task"]["examples"]["test"], 1500);
  EXPECT_LT(m["majority_class_rate"].get<double>(), 0.01);  // 4,096 values, none much more frequent
  EXPECT_EQ(r["config"]["model"]["short_conv"], 3);
  EXPECT_EQ(r["config"]["model"]["ffn_dim"], 0);
}

TEST(SequenceTask, TheExampleTaskIsCheckedAndLearnsToCopy) {
  TempDir dir;
  const std::string env = plugin_path(dir, {"fixture_copy_task"});
  auto check = lrahost("data check --task copy_demo", env);
  ASSERT_EQ(check.code, 0) << check.output;
  EXPECT_TRUE(contains(check.output, "a target per position, 9 classes (a sequence task)")) << check.output;
  // 2,000 examples x 16 scored positions (the separator and 15 copied symbols).
  EXPECT_TRUE(contains(check.output, "32000 scored positions")) << check.output;
  lra::test::write_text(dir.path() / "copy.toml", copy_manifest());
  const auto out = dir.path() / "run";
  auto o = lrahost("run --plugin transformer --task copy_demo --manifest " + (dir.path() / "copy.toml").string() +
                       " --threads 2 --out " + out.string(),
                   env);
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = json::parse(read_text(out / "result.json"));
  // Chance is 1/8 per position; attention with learned positions copies (100% after 600
  // updates on the development machine; these 300 reach well above chance).
  EXPECT_GT(r["metrics"]["test_accuracy"].get<double>(), 0.8) << o.output;
  EXPECT_GT(r["metrics"]["test_example_accuracy"].get<double>(), 0.05) << o.output;
  EXPECT_EQ(r["metrics"]["test_positions"], 200 * 16);
  EXPECT_TRUE(r["metrics"]["test_cells"].empty());
}

TEST(SequenceTask, AClassificationTaskBuiltForSdk13TrainsUnchanged) {
  TempDir dir;
  const std::string env = plugin_path(dir, {"fixture_old_task"});
  auto check = lrahost("data check --task old_task", env);
  ASSERT_EQ(check.code, 0) << check.output;
  EXPECT_TRUE(contains(check.output, "classes       4")) << check.output;
  std::string manifest = copy_manifest("cls", 60);
  manifest.replace(manifest.find("copy_demo"), 9, "old_task");
  manifest.replace(manifest.find("max_len = 33"), 12, "max_len = 8");
  manifest.replace(manifest.find("length = 16\nsymbols = 8\n"), 23, "");
  lra::test::write_text(dir.path() / "old.toml", manifest);
  const auto out = dir.path() / "run";
  auto o = lrahost("run --plugin transformer --task old_task --manifest " + (dir.path() / "old.toml").string() +
                       " --threads 2 --out " + out.string(),
                   env);
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = json::parse(read_text(out / "result.json"));
  EXPECT_FALSE(r["metrics"].contains("scored"));
  EXPECT_EQ(r["task"]["examples"]["test"], 50);
  // pooling "none" is for sequence tasks: exit 4, nothing written.
  lra::test::write_text(dir.path() / "none.toml", std::string(manifest).replace(manifest.find("\"cls\""), 5, "\"none\""));
  auto n = lrahost("run --plugin transformer --task old_task --manifest " + (dir.path() / "none.toml").string() +
                       " --threads 2 --out " + (dir.path() / "none").string(),
                   env);
  EXPECT_EQ(n.code, 4) << n.output;
  EXPECT_TRUE(contains(n.output, "gives one label per example")) << n.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "none" / "result.json"));
}

TEST(SequenceTask, RunsASequenceTaskCannotMakeAreRefusedBeforeAnyWork) {
  TempDir dir;
  // A pooled classifier on a sequence task.
  auto pooled = lrahost("run --plugin transformer --task mqar --preset smoke --set model.ffn_dim=64 "
                        "--set model.short_conv=0 --set model.positions=sinusoidal --set model.pooling=cls --out " +
                        (dir.path() / "a").string());
  EXPECT_EQ(pooled.code, 4) << pooled.output;
  EXPECT_TRUE(contains(pooled.output, "model.pooling must be \"none\"")) << pooled.output;
  // A mixer that cannot run causally.
  auto bidirectional = lrahost("run --plugin bigbird --task mqar --preset smoke --out " + (dir.path() / "b").string());
  EXPECT_EQ(bidirectional.code, 4) << bidirectional.output;
  EXPECT_TRUE(contains(bidirectional.output, "does not declare LRA_CAP_CAUSAL")) << bidirectional.output;
  // The sequence model's keys on a classification manifest.
  auto conv = lrahost("run --plugin transformer --task listops --preset smoke --set model.short_conv=3 --out " +
                      (dir.path() / "c").string());
  EXPECT_EQ(conv.code, 4) << conv.output;
  EXPECT_TRUE(contains(conv.output, "model.short_conv")) << conv.output;
  // A grid Zoology's generator could not draw.
  auto grid = lrahost("run --plugin transformer --task mqar --preset smoke --set data.test_grid=64x17x10 --out " +
                      (dir.path() / "d").string());
  EXPECT_EQ(grid.code, 4) << grid.output;
  EXPECT_TRUE(contains(grid.output, "test_grid")) << grid.output;
  // Steps that drop the context: the state a result would record is refused before any training.
  auto wrong = lrahost("run --plugin " + (std::filesystem::path(LRA_FIXTURE_PLUGIN_DIR) / "fixture_wrong_decode.so").string() +
                       " --task mqar --preset smoke --out " + (dir.path() / "e").string());
  EXPECT_EQ(wrong.code, 3) << wrong.output;
  EXPECT_TRUE(contains(wrong.output, "failed the conformance check 'decode'")) << wrong.output;
  for (const char* d : {"a", "b", "c", "d", "e"})
    EXPECT_FALSE(std::filesystem::exists(dir.path() / d / "result.json")) << d;
}

// A Python mixer runs a sequence task through the same path (its class declares "causal").
TEST(SequenceTask, APythonMixerRunsMqarAsACompiledOneDoes) {
  TempDir dir;
  const auto out = dir.path() / "run";
  const std::string retention = std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/retention.py:Retention";
  auto o = lrahost("run --plugin " + retention + " --task mqar --preset smoke --threads 2 --out " + out.string() +
                   " --set train.steps=20 --set train.eval_every=10 --set data.train_grid=64x4x200");
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = json::parse(read_text(out / "result.json"));
  EXPECT_EQ(r["metrics"]["scored"], "position");
  EXPECT_EQ(r["metrics"]["test_cells"].size(), 3u);
  EXPECT_EQ(r["plugin"]["name"], "Retention");
  // Its class defines decode_start and decode_step: its state is measured as a compiled mixer's is.
  EXPECT_TRUE(r["state_size"]["measured"].get<bool>()) << r["state_size"].dump();
}

// The host measures the decoding state of the trained model at each test length, never takes
// it from the plugin: softmax attention's KV cache grows linearly with the length, a fixed-state
// mixer's does not, and a mixer without decoding steps is "not measured".
TEST(SequenceTask, StateSizeIsMeasuredPerTestLength) {
  TempDir dir;
  std::map<std::string, json> state;
  for (const char* plugin : {"transformer", "linear_transformer", "s4d", "mamba2", "performer"}) {
    const auto out = dir.path() / plugin;
    auto o = lrahost(std::string("run --plugin ") + plugin + " --task mqar --preset smoke --threads 2 --out " +
                     out.string() + " --set model.max_len=128 --set train.steps=2 --set train.eval_every=2 " +
                     "--set data.train_grid=64x4x64 --set data.val_grid=64x4x10 --set data.test_grid=64x4x10,128x8x10");
    ASSERT_EQ(o.code, 0) << o.output;
    state[plugin] = json::parse(read_text(out / "result.json"))["state_size"];
  }
  // Block 0 is the host's short convolution (2 past inputs x 64 wide x 4 bytes); block 1 the
  // mixer. The KV cache: keys and values, 64 wide, float32: 512 bytes a token.
  const auto& kv = state["transformer"];
  ASSERT_TRUE(kv["measured"].get<bool>()) << kv.dump();
  ASSERT_EQ(kv["per_length"].size(), 2u);
  EXPECT_EQ(kv["per_length"][0]["length"], 64);
  EXPECT_EQ(kv["per_length"][1]["length"], 128);
  EXPECT_EQ(kv["per_length"][0]["bytes"], 2 * 64 * 4 + 64 * 512);
  EXPECT_EQ(kv["per_length"][1]["bytes"], 2 * 64 * 4 + 128 * 512);
  for (const char* fixed : {"linear_transformer", "s4d", "mamba2"}) {
    const auto& s = state[fixed];
    ASSERT_TRUE(s["measured"].get<bool>()) << fixed << ": " << s.dump();
    EXPECT_GT(s["per_length"][0]["bytes"].get<int64_t>(), 2 * 64 * 4) << fixed;
    EXPECT_EQ(s["per_length"][0]["bytes"], s["per_length"][1]["bytes"]) << fixed << ": " << s.dump();
  }
  // Isolated (--isolate: the mixers in a process of their own), the state crosses with every
  // step and is measured the same.
  const auto isolated = dir.path() / "isolated";
  auto iso = lrahost("run --isolate --plugin transformer --task mqar --preset smoke --threads 2 --out " +
                     isolated.string() + " --set model.max_len=128 --set train.steps=2 --set train.eval_every=2 " +
                     "--set data.train_grid=64x4x64 --set data.val_grid=64x4x10 --set data.test_grid=64x4x10,128x8x10");
  ASSERT_EQ(iso.code, 0) << iso.output;
  EXPECT_EQ(json::parse(read_text(isolated / "result.json"))["state_size"], kv);
  EXPECT_FALSE(state["performer"]["measured"].get<bool>());
  EXPECT_TRUE(contains(state["performer"]["why"].get<std::string>(), "does not decode")) << state["performer"].dump();
}

// suite --suite mqar runs every point of the smoke manifest's grid (two
// widths), without LRA's average or the paper's row, and reports the chosen
// point per width with the recall tables and plot.
TEST(SequenceTask, ASuiteOfMqarRunsItsGridAndHasNoLraAverage) {
  TempDir dir;
  const std::string out = (dir.path() / "s").string();
  auto o = lrahost("suite --suite mqar --plugin transformer --preset smoke --threads 2 --set train.steps=10 "
                   "--set train.eval_every=10 --set data.train_grid=64x4x100 --out " + out);
  ASSERT_EQ(o.code, 0) << o.output;
  const std::string md = read_text(dir.path() / "s" / "suite.md");
  EXPECT_TRUE(contains(md, "# transformer: suite mqar (smoke preset)")) << md;
  EXPECT_TRUE(contains(md, "## mqar: the best training point per model, chosen on validation")) << md;
  EXPECT_TRUE(contains(md, "| d_model 64 | (no training axis) |")) << md;
  EXPECT_TRUE(contains(md, "| d_model 128 | (no training axis) |")) << md;
  EXPECT_FALSE(contains(md, "LRA average")) << md;
  EXPECT_FALSE(contains(md, "LRA paper")) << md;
  for (const char* width : {"64", "128"})
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "s" / "runs" / "mqar" / (std::string("d_model-") + width) /
                                        "seed-0" / "result.json"))
        << width;
  const std::string recall = read_text(dir.path() / "s" / "recall.md");
  EXPECT_TRUE(contains(recall, "| `transformer` | 128 |")) << recall;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "s" / "recall.svg"));
  const auto summary = nlohmann::json::parse(read_text(dir.path() / "s" / "suite.json"));
  EXPECT_EQ(summary["suite"], "mqar");
  EXPECT_EQ(summary["grid_selections"].size(), 2u);
  EXPECT_EQ(summary["runs"][1]["point"]["model.d_model"], "128");

  // A task of another suite, and a --set on a swept axis, are refused before any run.
  auto wrong = lrahost("suite --plugin transformer --tasks mqar --preset smoke --out " + (dir.path() / "w").string());
  EXPECT_EQ(wrong.code, 2) << wrong.output;
  EXPECT_TRUE(contains(wrong.output, "'mqar' is not a task of suite lra")) << wrong.output;
  EXPECT_TRUE(contains(wrong.output, "pass --suite mqar")) << wrong.output;
  auto swept = lrahost("suite --suite mqar --plugin transformer --preset smoke --set model.d_model=128 --out " +
                       (dir.path() / "x").string());
  EXPECT_EQ(swept.code, 2) << swept.output;
  EXPECT_TRUE(contains(swept.output, "model.d_model is an axis of")) << swept.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "x" / "runs"));
  auto unknown = lrahost("suite --suite zoology --plugin transformer --out " + (dir.path() / "z").string());
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "unknown suite 'zoology' (suites: lra, mqar, mad)")) << unknown.output;
}

// suite --suite mad: the MAD tasks' smoke presets sweep MAD's weight decays;
// the summary chooses per task on validation and gives MAD's score, the mean.
TEST(SequenceTask, AMadSuiteChoosesPerTaskAndScoresTheMean) {
  TempDir dir;
  auto o = lrahost("suite --suite mad --plugin transformer --preset smoke --threads 2 --tasks mad_recall,mad_memorization "
                   "--set train.steps=4 --set train.eval_every=4 --set data.num_train_examples=64 --out " +
                   (dir.path() / "s").string());
  ASSERT_EQ(o.code, 0) << o.output;
  const std::string md = read_text(dir.path() / "s" / "suite.md");
  EXPECT_TRUE(contains(md, "# transformer: suite mad (smoke preset)")) << md;
  EXPECT_TRUE(contains(md, "## mad_recall: the best training point per model")) << md;
  EXPECT_TRUE(contains(md, "## mad_memorization: the best training point per model")) << md;
  EXPECT_TRUE(contains(md, "weight_decay 0: ")) << md;
  EXPECT_TRUE(contains(md, "weight_decay 0.1: ")) << md;
  EXPECT_TRUE(contains(md, "**Mean over the 2 tasks** (MAD's score): ")) << md;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "s" / "runs" / "mad_recall" / "weight_decay-0.1" / "seed-0" /
                                      "result.json"));
}
