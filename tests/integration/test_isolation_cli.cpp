// Issue 43: the judge in its own process. The verifier builds and runs the
// model itself; the submitted mixer runs in a confined process of its own
// that sees its own tensors and the mixer inputs, never a file of the run.
// Each attack of the issue beside its honest counterpart:
//   1. a weights-gated cheat (C++ and Python) finds no file of the run, and
//      its inflated accuracy is refused from the verifier's own predictions;
//   2. a million trained values in a buffer are counted against the budget
//      (the fresh weights are the verifier's, no file to swap);
//   3. a result claiming another device buys no accuracy: the report and the
//      leaderboard carry the verifier's own number;
//   5. a killed verifier leaves no half-filled --out and no sandbox area, and
//      a rerun succeeds; one bundle stops at its time budget.
// (Attack 4, the judged code's text: test_python_submit_cli.cpp.)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "common/ed25519.h"
#include "results/result.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool sandbox_works() { return std::system("bwrap --ro-bind / / --unshare-all true >/dev/null 2>&1") == 0; }

const char* kFewSteps = " --set train.steps=4 --set train.eval_every=4 --set train.warmup=2 --set train.steps_per_cycle=4"
                        " --set data.test_size=100";

class IsolationCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
  }
  fs::path train(const std::string& plugin, const std::string& name, const std::string& extra = "") {
    const fs::path out = d_.path() / "runs" / name;
    const auto o = lrahost("run --plugin " + plugin + " --task listops --preset smoke --threads 2 --seed 0 --data-dir " +
                           (d_.path() / "data").string() + " --out " + out.string() + kFewSteps + " " + extra);
    EXPECT_EQ(o.code, 0) << o.output;
    return out;
  }
  // The run's result with `edit` applied and sealed again, as a forger would.
  static void forge(const fs::path& run, const std::function<void(json&)>& edit) {
    json r = json::parse(read_text(run / "result.json"));
    edit(r);
    r.erase("digest");
    r.erase("signature");
    lra::host::write_result(run, lra::host::seal(r));
  }
  fs::path submit() {
    const fs::path bundle = d_.path() / "sub.tar";
    fs::remove(bundle);
    auto s = lrahost("submit " + (d_.path() / "runs").string() + " --out " + bundle.string());
    EXPECT_EQ(s.code, 0) << s.output;
    return bundle;
  }
  Outcome reevaluate(const fs::path& bundle, const fs::path& checked, const std::string& extra = "") {
    return lrahost("verify --reevaluate " + bundle.string() + " --out " + checked.string() + " --threads 2 --data-dir " +
                   (d_.path() / "data").string() + " " + extra);
  }
  static json report(const fs::path& checked, const std::string& run = "listops-seed-0") {
    return json::parse(read_text(checked / "runs" / run / "reevaluation.json"));
  }
  TempDir d_;
};

// Attack 1, C++: honest, the gated plugin re-evaluates valid (and its gate
// opens: the process does get its own trained tensors); forged to 100%, it
// finds nothing to answer from and the verifier's own predictions refuse it.
TEST_F(IsolationCli, AdversarialAWeightsGatedCheatFindsNoFileOfTheRun) {
  const fs::path run = train(fixture_plugin("fixture_gated_cheat"), "gated");
  auto honest = reevaluate(submit(), d_.path() / "honest");
  EXPECT_EQ(honest.code, 0) << honest.output;
  const std::string log = read_text(d_.path() / "honest" / "logs" / "listops-seed-0-mixer.log");
  EXPECT_NE(log.find("gated cheat: the gate is open"), std::string::npos) << log;
  EXPECT_NE(log.find("gated cheat: no file of the run in view"), std::string::npos) << log;
  EXPECT_EQ(log.find("gated cheat: found"), std::string::npos) << log;

  forge(run, [](json& r) { r["metrics"]["test_accuracy"] = 1.0; });
  auto v = reevaluate(submit(), d_.path() / "forged");
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("metrics.test_accuracy is 100.00%, the submitted model scores"), std::string::npos)
      << v.output;
  EXPECT_EQ(v.output.find("gated cheat"), std::string::npos) << v.output;
  EXPECT_FALSE(report(d_.path() / "forged")["valid"].get<bool>());
}

// Attack 1, Python: the same cheat as a PyTorch module.
TEST_F(IsolationCli, AdversarialAWeightsGatedPythonCheatFindsNoFileOfTheRun) {
  if (!fs::exists(fs::path(LRA_PLUGIN_DIR) / "lra_mixer_python.so")) GTEST_SKIP() << "no Python plugin in this build";
  const fs::path src = d_.path() / "src";
  fs::create_directories(src);
  fs::copy_file(fs::path(LRA_SOURCE_DIR) / "tests" / "fixtures" / "python" / "gated_cheat.py", src / "gated_cheat.py");
  const fs::path run = train((src / "gated_cheat.py").string() + ":GatedAttention", "gated");
  forge(run, [](json& r) { r["metrics"]["test_accuracy"] = 1.0; });
  const fs::path checked = d_.path() / "checked";
  auto v = reevaluate(submit(), checked);
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("metrics.test_accuracy is 100.00%, the submitted model scores"), std::string::npos)
      << v.output;
  const std::string log = read_text(checked / "logs" / "listops-seed-0-mixer.log");
  EXPECT_NE(log.find("gated cheat: the gate is open"), std::string::npos) << log;
  EXPECT_NE(log.find("gated cheat: no file of the run in view"), std::string::npos) << log;
  EXPECT_EQ(log.find("gated cheat: found"), std::string::npos) << log;
}

// Attack 2: 1,223,946 values in a buffer the plugin's code trains, and an
// exit handler that copies model.pt over the fresh weights file the old
// verifier read back. No such file exists now: the fresh weights are the
// verifier's, the buffer counts, and the result is over budget. The honest
// transformer beside it is within budget (ReevaluateCli checks every family).
TEST_F(IsolationCli, AdversarialAMillionHiddenValuesAreCountedAgainstTheBudget) {
  train(fixture_plugin("fixture_hidden_capacity"), "hidden");
  const fs::path checked = d_.path() / "checked";
  auto v = reevaluate(submit(), checked);
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("trained values (parameters and mixer buffers that differ from their initial values), over "
                          "the parameter budget"),
            std::string::npos) << v.output;
  const json rep = report(checked);
  EXPECT_GT(rep["parameters"]["counted"].get<int64_t>(), 1223946) << rep.dump(2);
  EXPECT_LT(rep["parameters"]["budget"].get<int64_t>(), 1223946) << rep.dump(2);
  EXPECT_NE(read_text(checked / "logs" / "listops-seed-0-mixer.log").find("hidden capacity: no model.pt and fresh.pt"),
            std::string::npos);
}

// Attack 3: a result whose timing.device names another device asks for the
// cross-device tolerance. It stays valid within it (honest cross-device work
// must), but what the report vouches for and the leaderboard shows is the
// verifier's own accuracy, not the inflated record. The honest result on the
// verifier's device publishes its recorded number unchanged.
TEST_F(IsolationCli, AdversarialAnotherDeviceInTheResultBuysNoAccuracy) {
  const fs::path run = train("transformer", "device");
  const double honest = json::parse(read_text(run / "result.json"))["metrics"]["test_accuracy"].get<double>();
  auto k = lrahost("keygen --out " + (d_.path() / "keys").string());
  ASSERT_EQ(k.code, 0) << k.output;
  const std::string sign = " --sign-key " + (d_.path() / "keys" / "lrahost-key.pem").string();

  auto v = reevaluate(submit(), d_.path() / "honest", sign);
  ASSERT_EQ(v.code, 0) << v.output;
  json rep = report(d_.path() / "honest");
  EXPECT_TRUE(rep["test"]["same_device_and_precision"].get<bool>()) << rep.dump(2);
  EXPECT_EQ(rep["test"]["published_accuracy"].get<double>(), honest);

  forge(run, [&](json& r) {
    r["timing"]["device"] = "NVIDIA H100 80GB HBM3";
    r["metrics"]["test_accuracy"] = honest + 0.004;
  });
  v = reevaluate(submit(), d_.path() / "forged", sign);
  ASSERT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("the leaderboard shows the accuracy recomputed here"), std::string::npos) << v.output;
  rep = report(d_.path() / "forged");
  EXPECT_FALSE(rep["test"]["same_device_and_precision"].get<bool>()) << rep.dump(2);
  EXPECT_EQ(rep["test"]["published_accuracy"].get<double>(), honest) << rep.dump(2);

  auto b = lrahost("leaderboard " + (d_.path() / "forged" / "runs").string() + " --out " + (d_.path() / "site").string() +
                   " --trusted-verifiers " + (d_.path() / "keys").string());
  ASSERT_EQ(b.code, 0) << b.output;
  const json board = json::parse(read_text(d_.path() / "site" / "leaderboard.json"));
  ASSERT_EQ(board["open"].size(), 1u) << board.dump(2);
  EXPECT_EQ(board["open"][0]["tasks"]["listops"]["accuracies"], json::array({honest})) << board.dump(2);
  EXPECT_EQ(board["open"][0]["checks"]["reevaluated"], 1) << board.dump(2);
}

// Issue 48: an author shows their own re-evaluation in one flag. --sign-as-author
// makes the author key on first use and signs the reports with it; the author's
// own leaderboard says "re-evaluated by its author", distinct from a trusted
// verifier's (not counted); anyone else's page sees an unknown key.
TEST_F(IsolationCli, AnAuthorSignsTheirOwnReevaluationAndTheirPageSaysSo) {
  train("transformer", "author");
  const fs::path bundle = submit();
  const fs::path author = d_.path() / "author-key";
  const std::string env = "LRA_AUTHOR_KEY_DIR=" + author.string();
  auto v = lrahost("verify --reevaluate " + bundle.string() + " --out " + (d_.path() / "own").string() +
                       " --threads 2 --data-dir " + (d_.path() / "data").string() + " --sign-as-author",
                   env);
  ASSERT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("made in " + author.string()), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("signed by your author key ed25519:"), std::string::npos) << v.output;
  EXPECT_TRUE(fs::exists(author / "lrahost-key.pem"));
  const std::string mine = lra::host::load_ed25519_private_key(author / "lrahost-key.pem").key_id;
  EXPECT_TRUE(report(d_.path() / "own").contains("signature")) << "signed, by the key the page recognises below";
  auto page = [&](const std::string& who) {
    fs::remove_all(d_.path() / "site");
    auto b = lrahost("leaderboard " + (d_.path() / "own" / "runs").string() + " --out " + (d_.path() / "site").string(),
                     "LRA_AUTHOR_KEY_DIR=" + who);
    EXPECT_EQ(b.code, 0) << b.output;
    return json::parse(read_text(d_.path() / "site" / "leaderboard.json"))["open"][0]["checks"];
  };
  const json own = page(author.string());
  EXPECT_EQ(own["reevaluated_by_author"], 1) << own.dump(2);
  EXPECT_EQ(own["reevaluated"], 0) << "an author's check is not a trusted verifier's";
  EXPECT_EQ(own["reevaluation_unverified"], 0) << own.dump(2);
  EXPECT_NE(read_text(d_.path() / "site" / "leaderboard.md").find("re-evaluated by its author 1/1 (not a trusted verifier)"),
            std::string::npos);
  const json theirs = page((d_.path() / "someone-else").string());
  EXPECT_EQ(theirs["reevaluated_by_author"], 0);
  EXPECT_EQ(theirs["reevaluation_unverified_reasons"], json::array({"unknown key " + mine}));
  // --sign-as-author needs --out (there is nothing to sign otherwise), and never with --sign-key.
  auto no_out = lrahost("verify --reevaluate " + bundle.string() + " --sign-as-author", env);
  EXPECT_EQ(no_out.code, 2) << no_out.output;
  auto both = lrahost("verify --reevaluate " + bundle.string() + " --out " + (d_.path() / "x").string() +
                          " --sign-as-author --sign-key " + (author / "lrahost-key.pem").string(),
                      env);
  EXPECT_EQ(both.code, 2) << both.output;
}

// Issue 43, point 5: kill -9 in the middle of a re-evaluation leaves no
// --out, and what it had written beside it and in /tmp is swept by the next
// one, which succeeds with the same --out.
TEST_F(IsolationCli, AKilledVerifierLeavesNothingAndTheRerunSucceeds) {
  train("transformer", "killed");
  const fs::path bundle = submit();
  const fs::path checked = d_.path() / "checked";
  const fs::path pid_file = d_.path() / "verifier.pid";
  const std::string cmd = std::string(LRAHOST_BIN) + " verify --reevaluate " + bundle.string() + " --out " +
                          checked.string() + " --threads 2 --data-dir " + (d_.path() / "data").string() +
                          " >/dev/null 2>&1 & echo $! > " + pid_file.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const pid_t pid = std::stoi(read_text(pid_file));
  // Its mixer process (a descendant, under bwrap) and the sandbox area it names.
  const auto parent_of = [](const std::string& p) {
    std::ifstream in("/proc/" + p + "/stat");
    std::string line;
    std::getline(in, line);
    const size_t close = line.rfind(')');
    std::istringstream rest(close == std::string::npos ? "" : line.substr(close + 2));
    std::string state, ppid;
    rest >> state >> ppid;
    return ppid;
  };
  const auto cmdline_of = [](const fs::path& proc) {
    std::ifstream in(proc / "cmdline", std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  std::string area;
  for (int i = 0; i < 600 && area.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string args = cmdline_of(it->path());
      const size_t at = args.find("/tmp/lrahost-sandbox-area-");
      if (args.find(std::string("mixer-server") + '\0') == std::string::npos || at == std::string::npos) continue;
      std::string p = it->path().filename().string();
      for (int up = 0; up < 6 && !p.empty() && p != "0"; ++up) {
        p = parent_of(p);
        if (p == std::to_string(pid)) area = args.substr(at, args.find('/', at + 5) - at);
      }
    }
  }
  ASSERT_FALSE(area.empty()) << "no mixer process of this verifier within 60 s";
  kill(pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto area_in_use = [&] {
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec))
      if (cmdline_of(it->path()).find(area) != std::string::npos) return true;
    return false;
  };
  EXPECT_FALSE(fs::exists(checked)) << "a killed verifier left --out behind";
  // Its mixer process saw its channel close and ended.
  bool ended = false;
  for (int i = 0; i < 100 && !ended; ++i) {
    ended = !area_in_use();
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(ended) << "the mixer process outlived its verifier";
  bool partial = false;
  for (const auto& e : fs::directory_iterator(d_.path()))
    partial |= e.path().filename().string().rfind(".checked.reevaluating-", 0) == 0;
  EXPECT_TRUE(partial) << "the killed verifier's working folder was expected beside --out";

  auto v = reevaluate(bundle, checked);
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_TRUE(fs::exists(checked / "runs" / "listops-seed-0" / "reevaluation.json"));
  EXPECT_FALSE(fs::exists(area)) << "the killed verifier's sandbox area was not swept";
  for (const auto& e : fs::directory_iterator(d_.path()))
    EXPECT_NE(e.path().filename().string().rfind(".checked.reevaluating-", 0), 0u) << e.path();
}

// Issue 43, point 5: one bundle cannot hold the verifier past its budget.
// A mixer whose evaluation takes 1.5 s a call (about 30 s in all) with
// --bundle-timeout 3: its mixer process is stopped at the budget, and the
// next run is not started; both say why.
TEST_F(IsolationCli, ABundleStopsAtItsTimeBudget) {
  train(fixture_plugin("fixture_slow_eval"), "a");
  train("transformer", "b");
  const auto start = std::chrono::steady_clock::now();
  auto v = reevaluate(submit(), d_.path() / "checked", "--bundle-timeout 3");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("stopped at the time limit (killed)"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("not re-evaluated: the bundle's time budget of 3 s (--bundle-timeout) was spent on the runs "
                          "before it"),
            std::string::npos) << v.output;
  EXPECT_LT(seconds, 120) << v.output;
}

}  // namespace
}  // namespace lra::test
