// Issue 31, the process slice, through the lrahost binary as an attacker
// would drive it, each with the honest case beside it:
//  - `span --run` never loads the library a result.json names (plugin.file);
//  - foreign, empty and malformed checkpoints/step-N folders survive pruning,
//    and this run's newest checkpoint survives them, so --resume works;
//  - `sweep` and `suite` refuse an unknown task or a seed list with a hole
//    before writing anything;
//  - a suite stopped by SIGTERM or SIGKILL leaves no child run training, and
//    runs again to completion from the checkpoint;
//  - two data-parallel ranks with dropout on train exactly as one process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

json load_json(const fs::path& p) { return json::parse(read_text(p)); }
void save_json(const fs::path& p, const json& j) { write_text(p, j.dump(2)); }
bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::string sha256_of(const fs::path& file) {
  std::string out = run_capture("sha256sum '" + file.string() + "'");
  return out.substr(0, out.find(' '));
}

// ---- span --run ------------------------------------------------------------

class SpanPlugin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    auto o = lrahost(tiny_run_args(data(), run().string()));
    ASSERT_EQ(o.code, 0) << o.output;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string data() { return dir_->str() + "/data"; }
  static fs::path run() { return dir_->path() / "run"; }
  // A copy of the run as it would arrive in someone's bundle, with `edit` applied to its result.json.
  static fs::path bundle(const std::string& name, const std::function<void(json&)>& edit) {
    const fs::path b = dir_->path() / name;
    fs::create_directories(b);
    fs::copy_file(run() / "model.pt", b / "model.pt", fs::copy_options::overwrite_existing);
    json r = load_json(run() / "result.json");
    edit(r);
    save_json(b / "result.json", r);
    return b;
  }
  std::string span(const fs::path& b, const std::string& extra = "") {
    return "span --run " + b.string() + " --samples 4 --threads 1 --data-dir " + data() + extra;
  }
  static TempDir* dir_;
};
TempDir* SpanPlugin::dir_ = nullptr;

const fs::path kTransformerSo = fs::path(LRA_PLUGIN_DIR) / "lra_mixer_transformer.so";

TEST_F(SpanPlugin, APluginFileNamedByAResultIsNeverLoadedEvenWithItsRealHash) {
  // The attacker ships the library and its true SHA-256 side by side: the hash
  // proves nothing. Here a loadable plugin that is not installed.
  const fs::path planted = dir_->path() / "planted" / "mixer.so";
  fs::create_directories(planted.parent_path());
  fs::copy_file(fixture_plugin("fixture_abi_old_minor"), planted, fs::copy_options::overwrite_existing);
  const fs::path b = bundle("planted-run", [&](json& r) {
    r["plugin"]["name"] = "fixture_abi_old_minor";
    r["plugin"]["file"] = planted.string();
    r["plugin"]["sha256"] = sha256_of(planted);
  });
  auto o = lrahost(span(b));
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_TRUE(contains(o.output, "no mixer plugin named 'fixture_abi_old_minor'")) << o.output;
  EXPECT_TRUE(contains(o.output, "--plugin PATH")) << o.output;
  EXPECT_FALSE(fs::exists(b / "span.json"));
}

TEST_F(SpanPlugin, ARecordedFileOfAnInstalledNameIsReplacedByTheInstalledPlugin) {
  ASSERT_TRUE(fs::exists(kTransformerSo)) << kTransformerSo;
  const fs::path planted = dir_->path() / "planted2" / "transformer.so";
  fs::create_directories(planted.parent_path());
  fs::copy_file(kTransformerSo, planted, fs::copy_options::overwrite_existing);
  const fs::path b = bundle("planted-transformer", [&](json& r) { r["plugin"]["file"] = planted.string(); });
  auto o = lrahost(span(b));
  ASSERT_EQ(o.code, 0) << o.output;
  const json s = load_json(b / "span.json");
  EXPECT_NE(s["plugin"]["file"].get<std::string>(), planted.string()) << "the planted file was loaded";
  EXPECT_TRUE(fs::equivalent(s["plugin"]["file"].get<std::string>(), kTransformerSo));
  EXPECT_TRUE(s["plugin"]["same_file_as_run"].get<bool>());
}

TEST_F(SpanPlugin, APluginPassedExplicitlyIsLoadedAndMustBeTheRunsPlugin) {
  // The honest way to measure with a file: name it on the command line.
  const fs::path mine = dir_->path() / "mine" / "transformer.so";
  fs::create_directories(mine.parent_path());
  fs::copy_file(kTransformerSo, mine, fs::copy_options::overwrite_existing);
  const fs::path b = bundle("explicit", [](json&) {});
  auto o = lrahost(span(b, " --plugin " + mine.string()));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(load_json(b / "span.json")["plugin"]["file"].get<std::string>(), mine.string());
  fs::remove(b / "span.json");
  auto other = lrahost(span(b, " --plugin linear_transformer"));
  EXPECT_EQ(other.code, 3) << other.output;
  EXPECT_TRUE(contains(other.output, "trained 'transformer'")) << other.output;
  EXPECT_FALSE(fs::exists(b / "span.json"));
}

// ---- checkpoint pruning ----------------------------------------------------

TEST(CheckpointPruning, ForeignEmptyAndMalformedStepFoldersNeitherDisplaceNorBlockTheRunsCheckpoints) {
  TempDir d;
  const std::string data = d.str() + "/data";
  const std::string ckpt = " --set train.checkpoint_every=2";
  const fs::path whole = d.path() / "whole", run = d.path() / "run";
  ASSERT_EQ(lrahost(tiny_run_args(data, whole.string()) + ckpt).code, 0);
  auto first = lrahost(tiny_run_args(data, run.string()) + ckpt);
  ASSERT_EQ(first.code, 0) << first.output;
  // Unfinished again at update 8: step-10 gone, result removed.
  const fs::path ck = run / "checkpoints";
  ASSERT_TRUE(fs::exists(ck / "step-8"));
  fs::remove_all(ck / "step-10");
  fs::remove(run / "result.json");
  // Planted: another run's intact checkpoint numbered above ours, an empty
  // folder, a malformed one, one far beyond the run.
  fs::copy(ck / "step-8", ck / "step-11");
  json st = load_json(ck / "step-8" / "state.json");
  st["step"] = 11;
  st["identity"]["seed"] = 99;
  save_json(ck / "step-11" / "state.json", st);
  fs::create_directories(ck / "step-1");
  fs::copy(ck / "step-8", ck / "step-9");
  write_text(ck / "step-9" / "state.json", "{\"step\": 9, ");
  fs::create_directories(ck / "step-100");

  auto resumed = lrahost(tiny_run_args(data, run.string()) + ckpt + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "resumed from " + (ck / "step-8").string())) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "skipping checkpoint " + (ck / "step-11").string() + ": it is another run's"))
      << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "not pruning " + (ck / "step-9").string())) << resumed.output;
  // The run's own newest two survive; nothing foreign was deleted.
  for (const char* s : {"step-8", "step-10", "step-1", "step-9", "step-11", "step-100"})
    EXPECT_TRUE(fs::exists(ck / s)) << s << " was deleted";
  EXPECT_EQ(load_json(run / "result.json")["metrics"], load_json(whole / "result.json")["metrics"]);

  // And the survivor resumes: the run continues from its own newest checkpoint.
  fs::remove(run / "result.json");
  auto again = lrahost(tiny_run_args(data, run.string()) + ckpt + " --resume");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_TRUE(contains(again.output, "resumed from " + (ck / "step-10").string())) << again.output;
  EXPECT_EQ(load_json(run / "result.json")["metrics"], load_json(whole / "result.json")["metrics"]);
}

TEST(CheckpointPruning, OnlyAnotherRunsCheckpointsIsStillARefusedResume) {
  TempDir d;
  const std::string data = d.str() + "/data";
  const fs::path run = d.path() / "run";
  ASSERT_EQ(lrahost(tiny_run_args(data, run.string()) + " --set train.checkpoint_every=4").code, 0);
  fs::remove(run / "result.json");
  auto o = lrahost(tiny_run_args(data, run.string()) + " --set train.checkpoint_every=4 --seed 5 --resume");
  EXPECT_EQ(o.code, 4) << o.output;
  EXPECT_TRUE(contains(o.output, "resume with the same")) << o.output;
}

// ---- sweep and suite lists -------------------------------------------------

TEST(SweepLists, AnUnknownTaskOrAHoleInTheSeedsIsRefusedBeforeAnythingIsWritten) {
  TempDir d;
  const fs::path out = d.path() / "sweep";
  const std::string base = "sweep --plugins transformer --preset smoke --out " + out.string();
  for (const std::string& mode : {std::string(" --slurm"), std::string("")}) {
    auto task = lrahost(base + mode + " --tasks listops,nosuch");
    EXPECT_EQ(task.code, 2) << task.output;
    EXPECT_TRUE(contains(task.output, "'nosuch'")) << task.output;
    EXPECT_TRUE(contains(task.output, "listops, ")) << "the known tasks are listed: " << task.output;
    auto seeds = lrahost(base + mode + " --tasks listops --seeds 0,,1");
    EXPECT_EQ(seeds.code, 2) << seeds.output;
    EXPECT_TRUE(contains(seeds.output, "empty item")) << seeds.output;
    auto twice = lrahost(base + mode + " --tasks listops,listops");
    EXPECT_EQ(twice.code, 2) << twice.output;
    EXPECT_FALSE(fs::exists(out)) << "written before the lists were checked" << mode;
  }
  auto suite = lrahost("suite --plugin transformer --tasks listops --seeds 0,,1 --preset smoke --out " + out.string());
  EXPECT_EQ(suite.code, 2) << suite.output;
  EXPECT_TRUE(contains(suite.output, "empty item")) << suite.output;
  auto suite_task = lrahost("suite --plugin transformer --tasks listops,nosuch --preset smoke --out " + out.string());
  EXPECT_EQ(suite_task.code, 2) << suite_task.output;
  EXPECT_TRUE(contains(suite_task.output, "'nosuch'")) << suite_task.output;
  EXPECT_FALSE(fs::exists(out));

  // Honest: every task known, the array written.
  auto ok = lrahost(base + " --slurm --tasks listops,image --seeds 0,1");
  ASSERT_EQ(ok.code, 0) << ok.output;
  EXPECT_TRUE(fs::exists(out / "sweep.sbatch"));
  EXPECT_EQ(load_json(out / "sweep.json")["entries"].size(), 4u);
}

// ---- a suite's child runs die with it -----------------------------------------

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_text(e.path() / "stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent)
      out.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return out;
}

// Gone, or a zombie nobody reaped yet (it no longer runs).
bool not_running(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && (stat[close + 2] == 'Z' || stat[close + 2] == 'X');
}

void expect_stopped_suite_leaves_no_child(int sig) {
  TempDir d;
  const fs::path out = d.path() / "suite";
  // Long enough to be caught mid-run, checkpointing every 20 updates.
  const std::string args =
      "suite --plugin transformer --tasks listops --seeds 0 --preset smoke --threads 1 --data-dir " + d.str() +
      "/data --out " + out.string() +
      " --set train.steps=400 --set train.eval_every=200 --set train.warmup=4 --set train.checkpoint_every=20"
      " --set data.train_size=160 --set data.val_size=40 --set data.test_size=40 --set data.min_length=8"
      " --set data.max_length=48 --set data.max_depth=3 --set model.max_len=48 --set model.layers=1"
      " --set model.d_model=32 --set model.heads=2 --set model.qkv_dim=32 --set model.ffn_dim=64";
  const pid_t suite = spawn_lrahost(args, d.path() / "suite.log");
  ASSERT_GT(suite, 0);
  const fs::path ck = out / "runs" / "listops" / "seed-0" / "checkpoints" / "step-20";
  const auto deadline = Clock::now() + std::chrono::minutes(3);
  while (!fs::exists(ck) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(ck)) << read_text(d.path() / "suite.log");
  const std::vector<pid_t> children = children_of(suite);
  ASSERT_EQ(children.size(), 1u) << "the suite's run is its one child";

  kill(suite, sig);
  int status = 0;
  waitpid(suite, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the suite went on: " << read_text(d.path() / "suite.log");
  EXPECT_EQ(WTERMSIG(status), sig);
  const auto gone_by = Clock::now() + std::chrono::seconds(10);
  while (!not_running(children[0]) && Clock::now() < gone_by) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(not_running(children[0])) << "child run " << children[0] << " still trains after the suite got signal "
                                        << sig;
  ASSERT_FALSE(fs::exists(out / "suite.json"));
  if (sig == SIGTERM) EXPECT_TRUE(contains(read_text(d.path() / "suite.log"), "stopped by SIGTERM"));

  // The same command continues the interrupted run from its checkpoint.
  auto again = lrahost(args);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_TRUE(fs::exists(out / "suite.json"));
  EXPECT_TRUE(contains(read_text(out / "logs" / "listops-seed-0.log"), "resumed from"));
}

TEST(SuiteSignals, ASigtermedSuiteStopsItsRunFirstAndResumes) { expect_stopped_suite_leaves_no_child(SIGTERM); }

TEST(SuiteSignals, ASigkilledSuiteTakesItsRunDownWithItAndResumes) { expect_stopped_suite_leaves_no_child(SIGKILL); }

// ---- dropout and world size --------------------------------------------------

TEST(DistributedDropout, TwoGlooRanksWithDropoutOnMatchOneProcess) {
  // Each rank used to draw its own masks: losses parted at the first update.
  const std::string run =
      "run --plugin transformer --task listops --preset smoke --set train.steps=60 --set train.eval_every=30 "
      "--set model.dropout=0.1 --set model.attention_dropout=0.1 --threads 1";
  TempDir d;
  auto single = lrahost(run + " --out " + (d.path() / "one").string());
  ASSERT_EQ(single.code, 0) << single.output;
  const std::string port = std::to_string(20000 + (getpid() + 7) % 20000);
  const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port;
  const auto two = d.path() / "two";
  const pid_t rank1 = spawn_lrahost(run + " --out " + two.string(), d.path() / "rank1.log", env + " RANK=1");
  ASSERT_GT(rank1, 0);
  auto rank0 = lrahost(run + " --out " + two.string(), env + " RANK=0");
  int status = 0;
  waitpid(rank1, &status, 0);
  ASSERT_EQ(rank0.code, 0) << rank0.output;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(d.path() / "rank1.log");

  const json a = load_json(d.path() / "one" / "result.json"), b = load_json(two / "result.json");
  EXPECT_EQ(a["config"]["model"]["dropout"], 0.1);
  EXPECT_EQ(a["config"]["model"]["attention_dropout"], 0.1);
  ASSERT_EQ(a["history"].size(), b["history"].size());
  for (size_t i = 0; i < a["history"].size(); ++i) {
    const double x = a["history"][i]["train_loss"], y = b["history"][i]["train_loss"];
    EXPECT_NEAR(x, y, 1e-5 * std::abs(x)) << "report " << i;
  }
  EXPECT_EQ(b["distributed"]["world_size"], 2);
  EXPECT_NEAR(a["metrics"]["test_accuracy"].get<double>(), b["metrics"]["test_accuracy"].get<double>(), 0.005);
}

}  // namespace
}  // namespace lra::test
