// Sequence tasks read from the last state (SDK 1.5, lra::SequenceReadout::
// from_last_state) through the lrahost binary: the readout is read only from
// task plugins built for 1.5; MAD's compression trains its encoder -> last
// state -> decoder model and scores every position; what cannot hold is
// refused before anything is written.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli_harness.h"

using lra::test::lrahost;
using lra::test::read_text;
using lra::test::TempDir;
using nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::string fingerprint_of(const std::string& output) {
  const auto at = output.find("fingerprint   ");
  return at == std::string::npos ? "" : output.substr(at + 14, output.find('\n', at) - at - 14);
}

// A tiny MAD compression run: 32 tokens over 16 symbols (MAD's baseline), a 2-block, 32-wide encoder.
std::string compression_manifest() {
  return "schema = \"lrahost.manifest/v1\"\nname = \"compression-test\"\ntask = \"mad_compression\"\n"
         "description = \"MAD compression, a few updates\"\n"
         "[model]\nlayers = 2\nd_model = 32\nheads = 2\nqkv_dim = 32\nffn_dim = 64\ndropout = 0.0\n"
         "attention_dropout = 0.0\npooling = \"none\"\npositions = \"none\"\nmax_len = 32\n"
         "[train]\nsteps = 20\nbatch_size = 32\nlr = 0.001\nschedule = \"constant\"\nwarmup = 0\n"
         "steps_per_cycle = 20\nweight_decay = 0.0\nbetas = [0.9, 0.999]\neps = 1e-8\ngrad_clip = 0.0\n"
         "eval_every = 10\ncheckpoint_every = 20\nseed = 0\neval_batch_size = 64\n"
         "[data]\nnum_train_examples = 256\nnum_val_examples = 64\nnum_test_examples = 64\n"
         "[rules]\nparam_budget_ratio = 1.5\n";
}

}  // namespace

// The same task built for 1.5 and claiming 1.4 (tests/fixtures/plugins/readout_task.cpp): only
// the 1.5 one is decoded from the last state, and only its fingerprint carries the readout.
TEST(LastState, TheReadoutIsReadFromTaskPluginsBuiltForSdk15Only) {
  TempDir dir;
  for (const char* f : {"fixture_readout_task", "fixture_readout_task_v14"})
    std::filesystem::copy_file(std::filesystem::path(LRA_FIXTURE_PLUGIN_DIR) / (std::string(f) + ".so"),
                               dir.path() / (std::string(f) + ".so"));
  const std::string env = "LRA_PLUGIN_PATH=" + dir.str();
  auto v15 = lrahost("data check --task readout_task", env);
  auto v14 = lrahost("data check --task readout_task_v14", env);
  ASSERT_EQ(v15.code, 0) << v15.output;
  ASSERT_EQ(v14.code, 0) << v14.output;
  EXPECT_TRUE(contains(v15.output, "readout       from the last state")) << v15.output;
  EXPECT_FALSE(contains(v14.output, "readout       ")) << v14.output;
  EXPECT_NE(fingerprint_of(v15.output), "");
  EXPECT_NE(fingerprint_of(v15.output), fingerprint_of(v14.output));
  // The built-in: compression is read from the last state, recall at every position.
  auto compression = lrahost("data check --task mad_compression");
  ASSERT_EQ(compression.code, 0) << compression.output;
  EXPECT_TRUE(contains(compression.output, "readout       from the last state")) << compression.output;
  auto recall = lrahost("data check --task mad_recall");
  ASSERT_EQ(recall.code, 0) << recall.output;
  EXPECT_FALSE(contains(recall.output, "readout       ")) << recall.output;
}

TEST(LastState, MadCompressionTrainsAnEncoderDecoderAndScoresEveryPosition) {
  TempDir dir;
  const auto manifest = dir.path() / "compression.toml";
  lra::test::write_text(manifest, compression_manifest());
  const auto out = dir.path() / "run";
  auto o = lrahost("run --plugin transformer --task mad_compression --manifest " + manifest.string() +
                   " --threads 2 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "readout: every position decoded from each example's last state")) << o.output;
  const json r = json::parse(read_text(out / "result.json"));
  const auto& m = r["metrics"];
  EXPECT_EQ(m["scored"], "position");
  EXPECT_EQ(m["readout"], "from_last_state");
  EXPECT_EQ(m["test_positions"], 64 * 32) << "every token of every test example, the compression token included";
  EXPECT_GE(m["test_accuracy"].get<double>(), 0.0);
  EXPECT_EQ(r["model"]["summary"], "every_position");
  // The encoder's mixers decode as any sequence task's: its state is measured (the KV cache at 32 tokens).
  EXPECT_TRUE(r["state_size"]["measured"].get<bool>()) << r["state_size"].dump();

  // What cannot hold is refused before any work: a pooled summary, a mixer that cannot run causally.
  auto pooled = lrahost("run --plugin transformer --task mad_compression --manifest " + manifest.string() +
                        " --set model.positions=sinusoidal --set model.pooling=cls --out " + (dir.path() / "a").string());
  EXPECT_EQ(pooled.code, 4) << pooled.output;
  EXPECT_TRUE(contains(pooled.output, "task 'mad_compression'")) << pooled.output;
  EXPECT_TRUE(contains(pooled.output, "(readout from_last_state), model.pooling must be \"none\"")) << pooled.output;
  auto bidirectional = lrahost("run --plugin bigbird --task mad_compression --manifest " + manifest.string() +
                               " --out " + (dir.path() / "b").string());
  EXPECT_EQ(bidirectional.code, 4) << bidirectional.output;
  EXPECT_TRUE(contains(bidirectional.output, "does not declare LRA_CAP_CAUSAL")) << bidirectional.output;
  for (const char* d : {"a", "b"}) EXPECT_FALSE(std::filesystem::exists(dir.path() / d / "result.json")) << d;
}
