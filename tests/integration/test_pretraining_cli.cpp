// Issue 44: the self-pretraining protocol through the command line (docs/rules.md
// "Self-pretraining"). `run --protocol spt` runs both phases and records the
// first; kill -9 and --stop-after anywhere, --resume equals uninterrupted;
// verify names the protocol and refuses each broken link of the chain with
// its reason (pretraining on a held-out split, a swapped pretrained
// checkpoint, settings edited after the run, a record that does not match its
// configuration); a Python mixer goes through both phases; the leaderboard
// keeps self-pretrained and from-scratch results apart; a bundle of a
// self-pretrained run re-evaluates valid (its fine-tuning's first updates
// replayed bit for bit), without its pretrained weights it does not, and a
// fine-tuning from other weights fails the replay.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <functional>
#include <set>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "results/result.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A tiny ListOps run under the smoke self-pretraining manifest: both phases in seconds.
const std::string kSets =
    " --set train.steps=40 --set train.eval_every=20 --set train.checkpoint_every=20 --set train.warmup=4"
    " --set pretrain.steps=40 --set pretrain.eval_every=10 --set pretrain.checkpoint_every=20 --set pretrain.warmup=4"
    " --set data.train_size=160 --set data.val_size=40 --set data.test_size=40 --set data.max_length=48"
    " --set model.max_len=48 --set model.layers=1 --set model.d_model=32 --set model.heads=2 --set model.qkv_dim=32"
    " --set model.ffn_dim=64";

std::string spt_run(const fs::path& data, const fs::path& out, const std::string& plugin = "transformer") {
  return "run --plugin " + plugin + " --task listops --preset smoke --protocol spt --threads 2 --data-dir " +
         data.string() + " --out " + out.string() + kSets;
}

bool sandbox_works() { return std::system("bwrap --ro-bind / / --unshare-all true >/dev/null 2>&1") == 0; }

json result(const fs::path& dir) { return json::parse(read_text(dir / "result.json")); }

// Writes `r` (changed) back, sealed again: only verify's content checks can refuse it.
void reseal(const fs::path& dir, json r) {
  r.erase("digest");
  write_text(dir / "result.json", lra::host::seal(std::move(r)).dump(2));
}

class PretrainingCli : public ::testing::Test {
 protected:
  fs::path data() const { return d_.path() / "data"; }
  // One honest self-pretrained run shared by the checks that only read it.
  const fs::path& honest() {
    if (honest_.empty()) {
      honest_ = d_.path() / "honest";
      const auto o = lrahost(spt_run(data(), honest_));
      EXPECT_EQ(o.code, 0) << o.output;
    }
    return honest_;
  }
  // `run` submitted alone (copied as runs-NAME/NAME) and re-evaluated into
  // checked-NAME; a submit that fails is returned in place of the verdict.
  Outcome submit_and_reevaluate(const fs::path& run, const std::string& name) {
    const fs::path runs = d_.path() / ("runs-" + name), bundle = d_.path() / (name + ".tar");
    fs::create_directories(runs);
    fs::copy(run, runs / name, fs::copy_options::recursive);
    const auto s = lrahost("submit " + runs.string() + " --out " + bundle.string());
    EXPECT_EQ(s.code, 0) << s.output;
    if (s.code != 0) return s;
    return lrahost("verify --reevaluate " + bundle.string() + " --out " + (d_.path() / ("checked-" + name)).string() +
                   " --threads 2 --data-dir " + data().string());
  }
  // A copy of the honest run to break.
  fs::path copy_of_honest(const std::string& name) {
    const fs::path to = d_.path() / name;
    fs::copy(honest(), to, fs::copy_options::recursive);
    return to;
  }
  TempDir d_;
  fs::path honest_;
};

TEST_F(PretrainingCli, BothPhasesRunAreRecordedAndVerify) {
  const fs::path run = honest();
  const json r = result(run);
  ASSERT_TRUE(r.contains("pretraining")) << r.dump(2);
  const json& p = r["pretraining"];
  EXPECT_EQ(p["objective"], "masked_tokens");  // the transformer reads ahead
  EXPECT_EQ(p["steps"], 40);
  EXPECT_EQ(p["mask_ratio"], 0.1);
  EXPECT_EQ(p["data"]["split"], "train");
  EXPECT_EQ(p["data"]["examples"], r["task"]["examples"]["train"]);
  EXPECT_NE(p["data"]["inputs_fingerprint"], p["data"]["held_out_inputs"]["test"]);
  EXPECT_EQ(p["history"].size(), 4u);
  EXPECT_EQ(r["config"]["pretrain"]["steps"], 40);
  EXPECT_TRUE(fs::exists(run / "pretraining" / "encoder.pt"));
  // The fine-tuning's weights after its first updates, which a re-evaluation replays.
  EXPECT_EQ(p["fine_tuning_start"]["updates"], 4);
  EXPECT_EQ(p["fine_tuning_start"]["weights_file"], "pretraining/fine-tuning-start.pt");
  EXPECT_TRUE(fs::exists(run / "pretraining" / "fine-tuning-start.pt"));
  // Both phases' curves: one table, one picture.
  const std::string csv = read_text(run / "history.csv");
  EXPECT_EQ(csv.rfind("phase,step,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\npretraining,10,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nfine-tuning,40,"), std::string::npos) << csv;
  EXPECT_NE(read_text(run / "curves.svg").find("pretraining (masked_tokens"), std::string::npos);
  const auto v = lrahost("verify " + (run / "result.json").string());
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("open self-pretrained, valid"), std::string::npos) << v.output;
}

TEST_F(PretrainingCli, ProtocolAndManifestMustAgree) {
  const auto scratch_spt = lrahost("run --plugin transformer --task listops --preset smoke --manifest " +
                                   std::string(LRA_SOURCE_DIR) + "/manifests/smoke/listops.toml --protocol spt");
  EXPECT_EQ(scratch_spt.code, 2) << scratch_spt.output;
  EXPECT_NE(scratch_spt.output.find("no [pretrain] section"), std::string::npos) << scratch_spt.output;
  const auto spt_scratch = lrahost("run --plugin transformer --task listops --manifest " + std::string(LRA_SOURCE_DIR) +
                                   "/manifests/smoke-spt/listops.toml");
  EXPECT_EQ(spt_scratch.code, 2) << spt_scratch.output;
  EXPECT_NE(spt_scratch.output.find("--protocol spt"), std::string::npos) << spt_scratch.output;
  const auto unknown = lrahost("run --plugin transformer --task listops --protocol pretrained");
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  const auto set_scratch = lrahost("run --plugin transformer --task listops --preset smoke --set pretrain.steps=5 --out " +
                                   (d_.path() / "never").string());
  EXPECT_EQ(set_scratch.code, 4) << set_scratch.output;
  EXPECT_FALSE(fs::exists(d_.path() / "never"));
}

// --stop-after slices fall in the first phase, on its boundary and in the
// second; SIGKILL right after the first phase finished: every resume ends
// where the uninterrupted run does.
TEST_F(PretrainingCli, StoppedOrKilledAnywhereAndResumedEqualsUninterrupted) {
  const json whole = result(honest());
  const fs::path sliced = d_.path() / "sliced";
  auto first = lrahost(spt_run(data(), sliced) + " --stop-after 0.001");
  ASSERT_EQ(first.code, 9) << first.output;
  EXPECT_NE(first.output.find("stopped at update 10 of 40"), std::string::npos) << first.output;
  EXPECT_TRUE(fs::exists(sliced / "pretraining" / "checkpoints" / "step-10"));
  auto fresh = lrahost(spt_run(data(), sliced));
  EXPECT_EQ(fresh.code, 2) << fresh.output;  // an unfinished run is continued with --resume only
  int slices = 1;
  Outcome o;
  do {
    o = lrahost(spt_run(data(), sliced) + " --stop-after 0.001 --resume");
    ++slices;
  } while (o.code == 9 && slices < 20);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_GE(slices, 5);  // stops at 10, 20, 30 of the first phase's 40 updates, then in the second
  const json s = result(sliced);
  EXPECT_EQ(s["metrics"], whole["metrics"]);
  EXPECT_EQ(s["history"], whole["history"]);
  EXPECT_EQ(s["pretraining"]["weights_sha256"], whole["pretraining"]["weights_sha256"]);
  EXPECT_EQ(s["pretraining"]["history"], whole["pretraining"]["history"]);
  EXPECT_EQ(s["model"]["sha256"], whole["model"]["sha256"]);

  // SIGKILL once the first phase is done, before the second writes a checkpoint:
  // the resume starts the second phase from the recorded weights, as the
  // uninterrupted run did (a second phase long enough to be caught in).
  const std::string longer = " --set train.steps=400 --set train.checkpoint_every=400 --set train.eval_every=200";
  const fs::path whole_long = d_.path() / "whole-long", killed = d_.path() / "killed";
  ASSERT_EQ(lrahost(spt_run(data(), whole_long) + longer).code, 0);
  const pid_t pid = spawn_lrahost(spt_run(data(), killed) + longer, d_.path() / "killed.log");
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (!fs::exists(killed / "pretraining" / "pretraining.json") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(fs::exists(killed / "pretraining" / "pretraining.json")) << read_text(d_.path() / "killed.log");
  ASSERT_FALSE(fs::exists(killed / "result.json")) << "the run finished before it could be killed";
  const auto resumed = lrahost(spt_run(data(), killed) + longer + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("pretraining: finished earlier"), std::string::npos) << resumed.output;
  const json a = result(whole_long), k = result(killed);
  EXPECT_EQ(k["metrics"], a["metrics"]);
  EXPECT_EQ(k["history"], a["history"]);
  EXPECT_EQ(k["model"]["sha256"], a["model"]["sha256"]);
  EXPECT_EQ(k["pretraining"]["weights_sha256"], a["pretraining"]["weights_sha256"]);
}

TEST_F(PretrainingCli, VerifyRefusesEachBrokenLinkOfTheChain) {
  struct Forgery {
    const char* name;
    std::function<void(json&)> edit;
    const char* reason;
  };
  const std::vector<Forgery> forgeries = {
      {"test-split", [](json& r) { r["pretraining"]["data"]["split"] = "test"; }, "never its validation or test"},
      {"test-inputs",
       [](json& r) { r["pretraining"]["data"]["inputs_fingerprint"] = r["pretraining"]["data"]["held_out_inputs"]["test"]; },
       "pretrained on held-out inputs"},
      {"other-task-size", [](json& r) { r["pretraining"]["data"]["examples"] = 96000; }, "the phase read other data"},
      {"edited-ratio", [](json& r) { r["config"]["pretrain"]["mask_ratio"] = 0.5; }, "config.pretrain.mask_ratio is 0.5"},
      {"edited-steps", [](json& r) { r["config"]["pretrain"]["steps"] = 400; }, "did not run the configured updates"},
      {"wrong-objective", [](json& r) { r["pretraining"]["objective"] = "next_token"; }, "pretrains with \"masked_tokens\""},
      {"no-record", [](json& r) { r.erase("pretraining"); }, "records none"},
      {"no-config", [](json& r) { r["config"].erase("pretrain"); }, "trains from scratch"},
  };
  for (const auto& f : forgeries) {
    SCOPED_TRACE(f.name);
    const fs::path dir = copy_of_honest(f.name);
    json r = result(dir);
    f.edit(r);
    reseal(dir, r);
    const auto v = lrahost("verify " + (dir / "result.json").string());
    EXPECT_EQ(v.code, 4) << v.output;
    EXPECT_NE(v.output.find("INVALID"), std::string::npos) << v.output;
    EXPECT_NE(v.output.find(f.reason), std::string::npos) << v.output;
  }
  // A swapped pretrained checkpoint: another run's weights (another seed) in its place.
  const fs::path other = d_.path() / "seed1";
  ASSERT_EQ(lrahost(spt_run(data(), other) + " --seed 1").code, 0);
  const fs::path swapped = copy_of_honest("swapped");
  fs::copy_file(other / "pretraining" / "encoder.pt", swapped / "pretraining" / "encoder.pt",
                fs::copy_options::overwrite_existing);
  const auto v = lrahost("verify " + (swapped / "result.json").string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("is not the pretraining's weights"), std::string::npos) << v.output;
  // ... and a fine-tuning recorded as starting from other weights: the other
  // run's record put into this result names weights that are not beside it.
  const fs::path other_start = copy_of_honest("other-start");
  json r = result(other_start);
  r["pretraining"] = result(other)["pretraining"];
  reseal(other_start, r);
  const auto w = lrahost("verify " + (other_start / "result.json").string());
  EXPECT_EQ(w.code, 4) << w.output;
  EXPECT_NE(w.output.find("is not the pretraining's weights"), std::string::npos) << w.output;
  // ... and a swapped file of the weights after the fine-tuning's first updates.
  const fs::path swapped_start = copy_of_honest("swapped-start");
  fs::copy_file(other / "pretraining" / "fine-tuning-start.pt", swapped_start / "pretraining" / "fine-tuning-start.pt",
                fs::copy_options::overwrite_existing);
  const auto x = lrahost("verify " + (swapped_start / "result.json").string());
  EXPECT_EQ(x.code, 4) << x.output;
  EXPECT_NE(x.output.find("is not the fine-tuning's weights after its first updates"), std::string::npos) << x.output;
  // A record of another number of replayed updates than the rule gives.
  const fs::path edited_updates = copy_of_honest("edited-updates");
  json e = result(edited_updates);
  e["pretraining"]["fine_tuning_start"]["updates"] = 2;
  reseal(edited_updates, e);
  const auto y = lrahost("verify " + (edited_updates / "result.json").string());
  EXPECT_EQ(y.code, 4) << y.output;
  EXPECT_NE(y.output.find("keeps its weights after 4"), std::string::npos) << y.output;
}

TEST_F(PretrainingCli, APythonMixerGoesThroughBothPhases) {
  const fs::path run = d_.path() / "python";
  const auto o = lrahost(spt_run(data(), run, std::string(LRA_SDK_PYTHON_EXAMPLES) + "/softmax_attention.py:SoftmaxAttention"));
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = result(run);
  EXPECT_EQ(r["pretraining"]["steps"], 40);
  EXPECT_EQ(lrahost("verify " + (run / "result.json").string()).code, 0);
  // Its bundle re-evaluates, the fine-tuning's start replayed through the confined Python mixer.
  if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
  const auto v = submit_and_reevaluate(run, "python");
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("give pretraining/fine-tuning-start.pt bit for bit"), std::string::npos) << v.output;
}

// A mixer that does not read ahead (the example retention, causal) pretrains
// as a causal LM: next-token prediction, no masking ratio recorded.
TEST_F(PretrainingCli, AMixerThatDoesNotReadAheadPretrainsOnTheNextToken) {
  const fs::path run = d_.path() / "retention";
  const auto o = lrahost(spt_run(data(), run, std::string(LRA_SDK_PYTHON_EXAMPLES) + "/retention.py:Retention"));
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = result(run);
  EXPECT_EQ(r["model"]["summary"], "after_last");
  EXPECT_EQ(r["pretraining"]["objective"], "next_token");
  EXPECT_FALSE(r["pretraining"].contains("mask_ratio"));
  const auto v = lrahost("verify " + (run / "result.json").string());
  EXPECT_EQ(v.code, 0) << v.output;
}

TEST_F(PretrainingCli, TheLeaderboardKeepsTheProtocolsApart) {
  const fs::path scratch = d_.path() / "scratch";
  const std::string scratch_run = "run --plugin transformer --task listops --preset smoke --threads 2 --data-dir " +
                                  data().string() + " --out " + scratch.string() + kSets.substr(0, kSets.find(" --set pretrain"));
  auto o = lrahost(scratch_run + kSets.substr(kSets.find(" --set data.")));
  ASSERT_EQ(o.code, 0) << o.output;
  const fs::path site = d_.path() / "site";
  o = lrahost("leaderboard " + (honest() / "result.json").string() + " " + (scratch / "result.json").string() +
              " --out " + site.string());
  ASSERT_EQ(o.code, 0) << o.output;
  const json board = json::parse(read_text(site / "leaderboard.json"));
  ASSERT_EQ(board["open"].size(), 2u) << board.dump(2);
  std::set<std::string> protocols;
  for (const auto& e : board["open"]) protocols.insert(e["protocol"].get<std::string>());
  EXPECT_EQ(protocols, (std::set<std::string>{"from scratch", "self-pretrained"}));
  EXPECT_TRUE(board["self_pretrained"].empty());  // open runs: never in the closed self-pretrained table
  EXPECT_FALSE(board["reference_self_pretrained"]["rows"].empty());
  EXPECT_NE(read_text(site / "index.html").find("Self-pretrained division"), std::string::npos);
}

// suite and bench --task take the protocol too: every run self-pretrains, and
// the prediction adds the first phase, timed on its own step.
TEST_F(PretrainingCli, SuiteAndBenchTakeTheProtocol) {
  const fs::path suite = d_.path() / "suite";
  std::string sets = kSets;
  auto o = lrahost("suite --plugin transformer --tasks listops --preset smoke --protocol spt --threads 2 --data-dir " +
                   data().string() + " --out " + suite.string() + sets);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(json::parse(read_text(suite / "suite.json"))["protocol"], "spt");
  EXPECT_TRUE(result(suite / "runs" / "listops" / "seed-0").contains("pretraining"));
  const fs::path bench = d_.path() / "bench";
  o = lrahost("bench --task listops --preset smoke --protocol spt --plugins transformer --warmup 0 --steps 1 "
              "--repeats 1 --device cpu --out " + bench.string());
  ASSERT_EQ(o.code, 0) << o.output;
  const json b = json::parse(read_text(bench / "bench.json"));
  const json& run = b["runs"][0];
  EXPECT_EQ(run["pretraining"]["steps"], 1000);  // smoke-spt/listops.toml
  EXPECT_EQ(run["pretraining"]["training"]["status"], "ok");
  EXPECT_GT(run["predicted_s"]["pretraining"].get<double>(), 0.0);
  EXPECT_NEAR(run["predicted_s"]["one_run"].get<double>(),
              run["predicted_s"]["pretraining"].get<double>() + run["predicted_s"]["training"].get<double>() +
                  run["predicted_s"]["evaluation"].get<double>(),
              1e-6);
  EXPECT_NE(read_text(bench / "bench.md").find("1,000 steps at"), std::string::npos);
}

TEST_F(PretrainingCli, ABundleOfASelfPretrainedRunReevaluatesValidAndNeedsItsWeights) {
  if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
  const fs::path runs = d_.path() / "runs";
  fs::create_directories(runs);
  fs::copy(honest(), runs / "spt", fs::copy_options::recursive);
  const fs::path bundle = d_.path() / "sub.tar";
  auto s = lrahost("submit " + runs.string() + " --out " + bundle.string());
  ASSERT_EQ(s.code, 0) << s.output;
  auto v = lrahost("verify --reevaluate " + bundle.string() + " --out " + (d_.path() / "checked").string() +
                   " --threads 2 --data-dir " + data().string());
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("self-pretrained"), std::string::npos) << v.output;
  // The fine-tuning's first updates, trained again in the verifier from encoder.pt, are the run's.
  EXPECT_NE(v.output.find("give pretraining/fine-tuning-start.pt bit for bit"), std::string::npos) << v.output;
  // Without its pretrained weights the run cannot be submitted.
  fs::remove(runs / "spt" / "pretraining" / "encoder.pt");
  fs::remove(bundle);
  s = lrahost("submit " + runs.string() + " --out " + bundle.string());
  EXPECT_NE(s.code, 0) << s.output;
  EXPECT_NE(s.output.find("encoder.pt is missing"), std::string::npos) << s.output;
}

// The start of the fine-tuning is proven by replaying it: a run whose
// fine-tuning started from other weights (here: a pretraining of 20 updates),
// its record and configuration rewritten to name the honest run's encoder.pt
// beside it, passes every check of the files (verify) and fails the
// re-evaluation, which trains the first updates again from that encoder.pt.
// A result written before the weights after the first updates were kept
// cannot be replayed, and is refused with that reason.
TEST_F(PretrainingCli, AReevaluationReplaysTheFineTuningStartAndRefusesOtherWeights) {
  if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
  const fs::path other = d_.path() / "other-start";
  ASSERT_EQ(lrahost(spt_run(data(), other) + " --set pretrain.steps=20").code, 0);
  json forged = result(other);
  const json honest_result = result(honest());
  for (const char* field : {"config", "overrides", "division_reasons"}) forged[field] = honest_result[field];
  const json start = forged["pretraining"]["fine_tuning_start"];
  forged["pretraining"] = honest_result["pretraining"];
  forged["pretraining"]["fine_tuning_start"] = start;  // the weights its fine-tuning really reached
  reseal(other, forged);
  fs::copy_file(honest() / "pretraining" / "encoder.pt", other / "pretraining" / "encoder.pt",
                fs::copy_options::overwrite_existing);
  const auto files = lrahost("verify " + (other / "result.json").string());
  ASSERT_EQ(files.code, 0) << files.output;  // nothing in the files gives it away

  const auto v = submit_and_reevaluate(other, "forged");
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("the fine-tuning did not start from pretraining/encoder.pt"), std::string::npos)
      << v.output;

  // A result without the record (as written before it was kept).
  const fs::path older = copy_of_honest("older");
  json o = result(older);
  o["pretraining"].erase("fine_tuning_start");
  reseal(older, o);
  fs::remove(older / "pretraining" / "fine-tuning-start.pt");
  ASSERT_EQ(lrahost("verify " + (older / "result.json").string()).code, 0);
  const auto w = submit_and_reevaluate(older, "older");
  EXPECT_EQ(w.code, 4) << w.output;
  EXPECT_NE(w.output.find("pretraining.fine_tuning_start is missing"), std::string::npos) << w.output;
}

// Every mixer this build ships, C++ and Python: a self-pretrained run's
// bundle replays its fine-tuning's first updates bit for bit in the
// verifier. Mixers that keep state outside their tensors (Performer counts
// its training forwards to redraw its features) fine-tune on a classifier
// built afresh with the pretrained weights, as the replay does.
TEST_F(PretrainingCli, EveryMixerReplaysItsFineTuningStartBitForBit) {
  if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
  const std::string small =
      " --set train.steps=8 --set train.eval_every=8 --set train.checkpoint_every=8 --set pretrain.steps=8"
      " --set pretrain.eval_every=8 --set pretrain.checkpoint_every=8 --set data.train_size=64 --set data.val_size=16"
      " --set data.test_size=16";
  const auto plugins = every_mixer_plugin();
  ASSERT_GE(plugins.size(), 12u);
  for (const auto& [name, spec] : plugins) {
    SCOPED_TRACE(name);
    const fs::path run = d_.path() / ("every-" + name);
    const auto o = lrahost(spt_run(data(), run, spec) + small);
    ASSERT_EQ(o.code, 0) << o.output;
    const auto v = submit_and_reevaluate(run, "every-" + name);
    EXPECT_EQ(v.code, 0) << v.output;
    EXPECT_NE(v.output.find("give pretraining/fine-tuning-start.pt bit for bit"), std::string::npos) << v.output;
  }
}

}  // namespace
}  // namespace lra::test
