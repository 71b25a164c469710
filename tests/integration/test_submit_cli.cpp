// Issue 16: a submission checked from its weights. `lrahost submit` packs
// runs into a bundle; `lrahost verify --reevaluate` unpacks it, rebuilds each
// model with the submitted plugin inside a bubblewrap sandbox, recomputes the
// test accuracy from label-free inputs and scores a fresh private test set;
// the leaderboard then shows how far each entry was checked.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "results/result.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kShortRun =
    "run --task listops --preset smoke --set train.steps=30 --set train.eval_every=30 --threads 2 --seed 0";

bool sandbox_works() { return std::system("bwrap --ro-bind / / --unshare-all true >/dev/null 2>&1") == 0; }

class SubmitCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
  }
  fs::path train(const std::string& plugin, const std::string& name, const std::string& extra = "",
                 const std::string& env = "") {
    const fs::path out = d_.path() / "runs" / name;
    const auto o = lrahost(kShortRun + " --plugin " + plugin + " --out " + out.string() + " " + extra, env);
    EXPECT_EQ(o.code, 0) << o.output;
    return out;
  }
  fs::path train_run(const std::string& name, const std::string& extra) { return train("transformer", name, extra); }
  TempDir d_;
};

TEST_F(SubmitCli, ATrueResultReevaluatesToTheSameAccuracyAndAPrivateSet) {
  train("transformer", "listops-0");
  const fs::path bundle = d_.path() / "sub.tar";
  auto s = lrahost("submit " + (d_.path() / "runs").string() + " --out " + bundle.string());
  ASSERT_EQ(s.code, 0) << s.output;
  EXPECT_NE(s.output.find("1 run, 1 plugin in 1 file"), std::string::npos) << s.output;
  const fs::path checked = d_.path() / "checked";
  auto v = lrahost("verify --reevaluate " + bundle.string() + " --out " + checked.string() + " --threads 2");
  ASSERT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("listops-seed-0: re-evaluated, valid"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("on the same device and precision"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("private test set: "), std::string::npos) << v.output;
  const json rep = json::parse(read_text(checked / "runs" / "listops-seed-0" / "reevaluation.json"));
  const json result = json::parse(read_text(checked / "runs" / "listops-seed-0" / "result.json"));
  EXPECT_EQ(rep["result_digest"], result["digest"]);
  EXPECT_EQ(rep["test"]["recomputed_accuracy"].get<double>(), result["metrics"]["test_accuracy"].get<double>());
  EXPECT_EQ(rep["test"]["examples"], result["task"]["examples"]["test"]);
  EXPECT_EQ(rep["private"]["examples"].get<int64_t>(), 1002);  // test_size 1000, train and val 1 each
  EXPECT_FALSE(rep["private"]["flagged"].get<bool>());
  EXPECT_TRUE(rep["sandbox"]["bubblewrap"].get<bool>());
  // The secret seed is written nowhere.
  EXPECT_EQ(rep["private"]["seed"], "secret (not recorded)");
  // Without --out nothing is left behind in the temporary folder's place.
  auto again = lrahost("verify --reevaluate " + bundle.string() + " --threads 2", "TMPDIR=" + d_.str());
  EXPECT_EQ(again.code, 0) << again.output;
  for (const auto& e : fs::directory_iterator(d_.path()))
    EXPECT_EQ(e.path().filename().string().find("lrahost-reevaluate"), std::string::npos) << e.path();
}

TEST_F(SubmitCli, AnInflatedAccuracyIsCaughtFromTheWeights) {
  const fs::path run = train("transformer", "listops-0");
  // The submitter edits the number and re-seals the digest (which anyone can do).
  json r = json::parse(read_text(run / "result.json"));
  r["metrics"]["test_accuracy"] = 0.9;
  r.erase("digest");
  r.erase("signature");
  lra::host::write_result(run, lra::host::seal(r));
  const fs::path bundle = d_.path() / "sub.tar";
  ASSERT_EQ(lrahost("submit " + run.string() + " --out " + bundle.string()).code, 0);
  auto v = lrahost("verify --reevaluate " + bundle.string() + " --threads 2");
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_NE(v.output.find("INVALID"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("metrics.test_accuracy is 90.00%, the submitted model scores"), std::string::npos)
      << v.output;
}

// A submitter who trains on the public test split: 100 test examples, and a
// training split made of them repeated 80 times. The public accuracy is near
// perfect, the private set's near the ListOps baseline.
TEST_F(SubmitCli, AModelTrainedOnThePublicTestSplitFailsThePrivateSet) {
  const fs::path data = d_.path() / "data";
  const std::string sets = " --set data.test_size=100 --data-dir " + data.string();
  ASSERT_EQ(lrahost(kShortRun + " --plugin transformer --set train.steps=1" + sets + " --out " +
                    (d_.path() / "gen").string()).code, 0);
  fs::path gen;
  for (const auto& e : fs::directory_iterator(data / "listops")) gen = e.path();
  ASSERT_TRUE(fs::exists(gen / "basic_test.tsv")) << gen;
  const std::string test = read_text(gen / "basic_test.tsv");
  const std::string rows = test.substr(test.find('\n') + 1);
  std::string train = test.substr(0, test.find('\n') + 1);
  for (int i = 0; i < 80; ++i) train += rows;
  write_text(gen / "basic_train.tsv", train);
  const fs::path run = train_run("cheat", "--set train.steps=300 --set train.eval_every=300" + sets);
  const json r = json::parse(read_text(run / "result.json"));
  ASSERT_GT(r["metrics"]["test_accuracy"].get<double>(), 0.8) << "the model did not memorise the test split";
  const fs::path bundle = d_.path() / "cheat.tar";
  ASSERT_EQ(lrahost("submit " + run.string() + " --out " + bundle.string()).code, 0);
  auto v = lrahost("verify --reevaluate " + bundle.string() + " --threads 2 --data-dir " + data.string());
  EXPECT_EQ(v.code, 4) << v.output;
  // The recomputed public accuracy is the recorded one: only the private set exposes it.
  EXPECT_NE(v.output.find("on the same device and precision"), std::string::npos) << v.output;
  EXPECT_EQ(v.output.find("metrics.test_accuracy is"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("the model was likely trained or selected on the public test split"), std::string::npos)
      << v.output;
}

TEST_F(SubmitCli, PluginCodeCannotWriteOutsideTheScratchFolderOrOpenASocket) {
  const std::string plugin = fixture_plugin("fixture_escape");
  // The plugin's compiled-in probe folder (tests/fixtures/CMakeLists.txt): it
  // probes only while the folder exists.
  const fs::path probe = LRA_ESCAPE_PROBE_DIR;
  fs::remove_all(probe);
  fs::create_directories(probe);
  struct Cleanup {
    fs::path p;
    ~Cleanup() { std::error_code ec; fs::remove_all(p, ec); }
  } cleanup{probe};
  const int server = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(server, 16), 0);
  socklen_t len = sizeof addr;
  getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string port = std::to_string(ntohs(addr.sin_port));

  // Control: unconfined (during training) the probe does escape, so the checks below can fail.
  train(plugin, "escape");
  ASSERT_FALSE(fs::is_empty(probe)) << "the probe plugin could not write even unconfined";
  fs::remove_all(probe);
  fs::create_directories(probe);
  fcntl(server, F_SETFL, O_NONBLOCK);
  while (true) {  // the training's connections, so that only the sandbox's would be left
    const int c = accept(server, nullptr, nullptr);
    if (c < 0) break;
    close(c);
  }

  const fs::path bundle = d_.path() / "sub.tar";
  ASSERT_EQ(lrahost("submit " + (d_.path() / "runs" / "escape").string() + " --out " + bundle.string()).code, 0);
  const fs::path checked = d_.path() / "checked";
  auto v = lrahost("verify --reevaluate " + bundle.string() + " --out " + checked.string() + " --threads 2");
  EXPECT_EQ(v.code, 0) << v.output;  // the attempts fail; the evaluation itself is honest
  EXPECT_TRUE(fs::is_empty(probe)) << "a file was written outside the sandbox's scratch folder";
  EXPECT_LT(accept(server, nullptr, nullptr), 0) << "the sandboxed plugin reached a socket on the host";
  close(server);
  // What the plugin printed stays in the maintainer's local log, never in reevaluation.json.
  const std::string report = read_text(checked / "runs" / "listops-seed-0" / "reevaluation.json");
  EXPECT_EQ(report.find("escape probe"), std::string::npos) << report;
  const std::string log = read_text(checked / "logs" / "listops-seed-0-mixer.log");
  // The probe folder is not even there, nor /etc/shadow or /root; the
  // sandbox's network namespace has no listener at all.
  EXPECT_NE(log.find("escape probe: write"), std::string::npos) << log;
  EXPECT_NE(log.find("escape probe: read /etc/shadow: No such file or directory"), std::string::npos) << log;
  EXPECT_NE(log.find("escape probe: list /root: No such file or directory"), std::string::npos) << log;
  EXPECT_NE(log.find("escape probe: listeners on 127.0.0.1: 0"), std::string::npos) << log;
  EXPECT_EQ(log.find("succeeded"), std::string::npos) << log;
}

TEST_F(SubmitCli, SubmitRefusesWhatCannotBeChecked) {
  const fs::path run = train("transformer", "listops-0");
  // Missing weights.
  fs::rename(run / "model.pt", d_.path() / "model.pt");
  auto missing = lrahost("submit " + run.string() + " --out " + (d_.path() / "a.tar").string());
  EXPECT_EQ(missing.code, 5) << missing.output;
  EXPECT_NE(missing.output.find("model.pt is missing"), std::string::npos) << missing.output;
  fs::rename(d_.path() / "model.pt", run / "model.pt");
  // An edited result.
  json r = json::parse(read_text(run / "result.json"));
  r["metrics"]["test_accuracy"] = 0.99;
  write_text(run / "result.json", r.dump(2));
  auto edited = lrahost("submit " + run.string() + " --out " + (d_.path() / "b.tar").string());
  EXPECT_EQ(edited.code, 4) << edited.output;
  EXPECT_NE(edited.output.find("does not verify"), std::string::npos) << edited.output;
  EXPECT_FALSE(fs::exists(d_.path() / "a.tar"));
  EXPECT_FALSE(fs::exists(d_.path() / "b.tar"));
}

TEST_F(SubmitCli, ATamperedBundleIsRefusedBeforeAnyCodeRuns) {
  train("transformer", "listops-0");
  const fs::path bundle = d_.path() / "sub.tar";
  ASSERT_EQ(lrahost("submit " + (d_.path() / "runs").string() + " --out " + bundle.string()).code, 0);
  // Flip one byte near the end of the archive (inside the last file's data).
  std::string bytes = read_text(bundle);
  const auto at = bytes.rfind("model.pt");  // the tar header of the last entry
  ASSERT_NE(at, std::string::npos);
  bytes[at + 2048] = static_cast<char>(bytes[at + 2048] ^ 0x55);
  write_text(bundle, bytes);
  auto v = lrahost("verify --reevaluate " + bundle.string());
  EXPECT_EQ(v.code, 5) << v.output;
  EXPECT_NE(v.output.find("bundle.json says"), std::string::npos) << v.output;
}

// Signing: keygen -> run --sign-key -> verify (signed by, --trusted-keys).
TEST_F(SubmitCli, SignedResultsVerifyAgainstTrustedKeysAndEditsAreCaught) {
  const fs::path keys = d_.path() / "keys", other = d_.path() / "other-keys";
  auto kg = lrahost("keygen --out " + keys.string());
  ASSERT_EQ(kg.code, 0) << kg.output;
  const std::string id = kg.output.substr(kg.output.find("ed25519:"), 24);
  EXPECT_EQ(fs::status(keys / "lrahost-key.pem").permissions() & fs::perms::group_read, fs::perms::none);
  EXPECT_EQ(lrahost("keygen --out " + keys.string()).code, 2);  // never replaces a key
  ASSERT_EQ(lrahost("keygen --out " + other.string()).code, 0);

  // A public key or junk as --sign-key: exit 2 before any work, no run directory.
  auto pub = lrahost(kShortRun + " --plugin transformer --out " + (d_.path() / "x").string() + " --sign-key " +
                     (keys / "lrahost-key.pub.pem").string());
  EXPECT_EQ(pub.code, 2) << pub.output;
  EXPECT_NE(pub.output.find("is a public key"), std::string::npos) << pub.output;
  EXPECT_FALSE(fs::exists(d_.path() / "x"));

  const fs::path run = train("transformer", "signed", "--sign-key " + (keys / "lrahost-key.pem").string());
  auto v = lrahost("verify " + run.string());
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("valid, signed by " + id), std::string::npos) << v.output;
  EXPECT_EQ(lrahost("verify " + run.string() + " --trusted-keys " + keys.string()).code, 0);
  auto stranger = lrahost("verify " + run.string() + " --trusted-keys " + other.string());
  EXPECT_EQ(stranger.code, 4) << stranger.output;
  EXPECT_NE(stranger.output.find("which is not among the trusted keys"), std::string::npos) << stranger.output;
  const fs::path plain = train("transformer", "plain");
  auto unsigned_run = lrahost("verify " + plain.string() + " --trusted-keys " + keys.string());
  EXPECT_EQ(unsigned_run.code, 4) << unsigned_run.output;
  EXPECT_NE(unsigned_run.output.find("unsigned, and --trusted-keys"), std::string::npos) << unsigned_run.output;
  EXPECT_EQ(lrahost("verify " + run.string() + " --trusted-keys " + (d_.path() / "none").string()).code, 2);

  // Edited and re-sealed, keeping the old signature: invalid.
  json r = json::parse(read_text(run / "result.json"));
  r["metrics"]["test_accuracy"] = 0.95;
  const json sig = r["signature"];
  r.erase("digest");
  r.erase("signature");
  json resealed = lra::host::seal(r);
  resealed["signature"] = sig;
  write_text(run / "result.json", resealed.dump(2));
  auto edited = lrahost("verify " + run.string());
  EXPECT_EQ(edited.code, 4) << edited.output;
  EXPECT_NE(edited.output.find("does not verify over the digest"), std::string::npos) << edited.output;

  // Other weights beside an intact result (here: one byte more): invalid.
  std::ofstream(plain / "model.pt", std::ios::app | std::ios::binary) << '\0';
  auto swapped = lrahost("verify " + plain.string());
  EXPECT_EQ(swapped.code, 4) << swapped.output;
  EXPECT_NE(swapped.output.find("model.pt was changed after the run"), std::string::npos) << swapped.output;
}

TEST_F(SubmitCli, SuiteSignsEveryRun) {
  const fs::path keys = d_.path() / "keys";
  ASSERT_EQ(lrahost("keygen --out " + keys.string()).code, 0);
  const fs::path out = d_.path() / "suite";
  auto s = lrahost("suite --plugin transformer --tasks listops --seeds 0,1 --preset smoke --threads 2 --set "
                   "train.steps=20 --set train.eval_every=20 --out " + out.string() + " --sign-key " +
                   (keys / "lrahost-key.pem").string());
  ASSERT_EQ(s.code, 0) << s.output;
  auto v = lrahost("verify " + out.string() + " --trusted-keys " + keys.string());
  EXPECT_EQ(v.code, 0) << v.output;
  size_t signed_count = 0;
  for (size_t at = v.output.find("signed by ed25519:"); at != std::string::npos;
       at = v.output.find("signed by ed25519:", at + 1))
    ++signed_count;
  EXPECT_EQ(signed_count, 2u) << v.output;
  EXPECT_EQ(lrahost("suite --plugin transformer --tasks listops --preset smoke --out " + (d_.path() / "s2").string() +
                    " --sign-key " + (d_.path() / "missing.pem").string()).code, 2);
}


// The whole path a submission takes: run -> submit -> verify --reevaluate ->
// leaderboard, and the page as a browser renders it shows the check levels.
TEST_F(SubmitCli, SmokeSubmissionEndToEndShowsItsCheckLevelsInChromium) {
  const fs::path keys = d_.path() / "keys";
  auto kg = lrahost("keygen --out " + keys.string());
  ASSERT_EQ(kg.code, 0) << kg.output;
  const std::string id = kg.output.substr(kg.output.find("ed25519:"), 24);
  train("transformer", "listops-0", "--sign-key " + (keys / "lrahost-key.pem").string());
  const fs::path bundle = d_.path() / "sub.tar";
  ASSERT_EQ(lrahost("submit " + (d_.path() / "runs").string() + " --out " + bundle.string()).code, 0);
  // Signed by a key the maintainer trusts: re-evaluated; by another: refused.
  const fs::path other_keys = d_.path() / "other-keys";
  ASSERT_EQ(lrahost("keygen --out " + other_keys.string()).code, 0);
  auto untrusted =
      lrahost("verify --reevaluate " + bundle.string() + " --threads 2 --trusted-keys " + other_keys.string());
  EXPECT_EQ(untrusted.code, 4) << untrusted.output;
  EXPECT_NE(untrusted.output.find("which is not among the trusted keys"), std::string::npos) << untrusted.output;
  const fs::path checked = d_.path() / "checked";
  // The maintainer signs the re-evaluation reports (here with the same key) and the leaderboard trusts that key.
  auto v = lrahost("verify --reevaluate " + bundle.string() + " --out " + checked.string() + " --threads 2 " +
                   "--trusted-keys " + keys.string() + " --sign-key " + (keys / "lrahost-key.pem").string());
  ASSERT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("reevaluation.json signed by " + id), std::string::npos) << v.output;
  const json report = json::parse(read_text(checked / "runs" / "listops-seed-0" / "reevaluation.json"));
  EXPECT_EQ(report["signed_by"], id);
  EXPECT_EQ(report["signature"]["key_id"], id);
  const fs::path site = d_.path() / "site";
  auto lb = lrahost("leaderboard " + checked.string() + " --out " + site.string() + " --trusted-verifiers " +
                    keys.string());
  ASSERT_EQ(lb.code, 0) << lb.output;
  const std::string expected = "checked: digest 1/1 · signed 1/1 (" + id + ") · re-evaluated 1/1 (by " + id +
                               ") · private set 1/1";
  EXPECT_NE(read_text(site / "leaderboard.md").find(expected), std::string::npos) << read_text(site / "leaderboard.md");
  const json board = json::parse(read_text(site / "leaderboard.json"));
  ASSERT_EQ(board["open"].size(), 1u) << board.dump(2);
  EXPECT_EQ(board["open"][0]["checks"]["reevaluated"], 1);
  EXPECT_EQ(board["open"][0]["checks"]["private_set"], 1);

  // A re-evaluation report moved beside another result says nothing about it.
  const fs::path other = train("transformer", "listops-1", "--set train.steps=31");
  fs::copy_file(checked / "runs" / "listops-seed-0" / "reevaluation.json", other / "reevaluation.json");
  auto moved = lrahost("leaderboard " + other.string() + " --out " + (d_.path() / "site2").string() +
                       " --trusted-verifiers " + keys.string());
  ASSERT_EQ(moved.code, 0) << moved.output;
  EXPECT_NE(read_text(d_.path() / "site2" / "leaderboard.md").find("re-evaluated another result"), std::string::npos);

  const std::string chromium = chromium_path();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not on PATH (scripts/bootstrap installs it)";
  const std::string dom = run_capture("HOME=" + d_.str() + " timeout 120 " + chromium +
                                      " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run"
                                      " --user-data-dir=" + (d_.path() / "profile").string() +
                                      " --dump-dom file://" + (site / "index.html").string() + " 2>/dev/null");
  ASSERT_NE(dom.find("</html>"), std::string::npos) << "chromium rendered nothing";
  EXPECT_NE(dom.find(expected), std::string::npos) << dom.substr(0, 3000);
}

}  // namespace
}  // namespace lra::test
