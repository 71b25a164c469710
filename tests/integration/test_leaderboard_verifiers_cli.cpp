// Issue 31, the leaderboard's side of re-evaluation: a reevaluation.json
// counts only when a trusted verifier signed it (`verify --reevaluate
// --sign-key`, `leaderboard --trusted-verifiers`), an untrusted one can
// neither credit nor discredit a result, and nothing the judged code wrote
// (the sandbox's output) or any unbounded string from a result reaches the
// published pages. Reports are written here as verify --reevaluate writes
// them (seal_reevaluation) beside a result from one short real run.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "common/ed25519.h"
#include "reevaluation/reevaluate.h"
#include "reevaluation/reevaluation_signature.h"
#include "results/result.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using lra::host::Ed25519PrivateKey;

// What a hostile plugin read inside the sandbox (issue 31: /etc/shadow and the maintainer's key).
const std::string kSecret = "root:$y$SECRET-shadow-line";

class LeaderboardVerifiers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    auto o = lrahost("run --plugin transformer --task listops --preset smoke --set train.steps=20 --set "
                     "train.eval_every=20 --threads 2 --out " + (dir_->path() / "base").string());
    ASSERT_EQ(o.code, 0) << o.output;
    base_ = new json(json::parse(read_text(dir_->path() / "base" / "result.json")));
    for (const char* who : {"maintainer", "stranger"}) {
      auto k = lrahost("keygen --out " + (dir_->path() / who).string());
      ASSERT_EQ(k.code, 0) << k.output;
    }
  }
  static void TearDownTestSuite() {
    delete base_;
    delete dir_;
  }
  void SetUp() override { fs::remove_all(results()); }

  static fs::path results() { return dir_->path() / "results"; }
  static fs::path site() { return dir_->path() / "site"; }
  static fs::path keys(const std::string& who) { return dir_->path() / who; }
  static Ed25519PrivateKey key(const std::string& who) {
    return lra::host::load_ed25519_private_key(keys(who) / "lrahost-key.pem");
  }
  static std::string key_id(const std::string& who) { return key(who).key_id; }

  // A sealed copy of the run's result in results()/name; returns it.
  static json write_result(const std::string& name, json r = *base_) {
    r.erase("digest");
    r = lra::host::seal(r);
    lra::host::write_result(results() / name, r);
    return r;
  }
  // A report as verify --reevaluate writes it for `result`.
  static json report(const json& result, bool valid) {
    return {{"schema", lra::host::kReevaluationSchema},
            {"run", "listops-0"},
            {"bundle", "sub.tar"},
            {"verifier", {{"version", "0.1.0"}, {"git_revision", "0123456789ab"}}},
            {"checked_at", "2026-11-30T00:00:00Z"},
            {"result_digest", result["digest"]},
            {"division", "open"},
            {"signed_by", nullptr},
            {"test", {{"recorded_accuracy", 0.3}, {"recomputed_accuracy", valid ? 0.3 : 0.1}, {"examples", 1000}}},
            {"private", {{"examples", 1002}, {"flagged", false}}},
            {"sandbox", {{"bubblewrap", true}, {"outcome", valid ? "exit 0" : "exit 1"}, {"log_tail", ""}}},
            {"valid", valid},
            {"reasons", valid ? json::array() : json::array({"metrics.test_accuracy is 30.00%, the submitted model "
                                                              "scores 10.00% on the official test split"})},
            {"facts", json::array()}};
  }
  // Sealed (and signed with `signer`'s key unless it is "") beside results()/name/result.json.
  static void write_report(const std::string& name, const json& rep, const std::string& signer) {
    const auto k = signer.empty() ? std::optional<Ed25519PrivateKey>() : std::optional<Ed25519PrivateKey>(key(signer));
    write_raw_report(name, lra::host::seal_reevaluation(rep, k ? &*k : nullptr));
  }
  static void write_raw_report(const std::string& name, const json& rep) {
    write_text(results() / name / "reevaluation.json", rep.dump(2) + "\n");
  }
  // The leaderboard over results(), trusting the maintainer's key unless told otherwise.
  static Outcome board(const std::string& verifiers = "maintainer") {
    fs::remove_all(site());
    return lrahost("leaderboard " + results().string() + " --out " + site().string() +
                   (verifiers.empty() ? "" : " --trusted-verifiers " + keys(verifiers).string()));
  }
  static json board_json() { return json::parse(read_text(site() / "leaderboard.json")); }
  static std::string pages() {
    return read_text(site() / "index.html") + read_text(site() / "leaderboard.md") +
           read_text(site() / "leaderboard.json");
  }
  // The one open entry's checks.
  static json checks() {
    const json j = board_json();
    EXPECT_EQ(j["open"].size(), 1u) << j.dump(2);
    return j["open"].empty() ? json() : j["open"][0]["checks"];
  }

  static TempDir* dir_;
  static json* base_;
};
TempDir* LeaderboardVerifiers::dir_ = nullptr;
json* LeaderboardVerifiers::base_ = nullptr;

TEST_F(LeaderboardVerifiers, AForgedUnsignedReportIsShownUnverifiedAndNotCounted) {
  const json r = write_result("a");
  write_report("a", report(r, true), "");  // valid, right result_digest: all a forger needs to write
  auto o = board();
  ASSERT_EQ(o.code, 0) << o.output;
  const json c = checks();
  EXPECT_EQ(c["reevaluated"], 0);
  EXPECT_EQ(c["private_set"], 0);
  EXPECT_EQ(c["reevaluation_unverified"], 1);
  EXPECT_EQ(c["reevaluation_unverified_reasons"], json::array({"unsigned"}));
  EXPECT_NE(read_text(site() / "leaderboard.md").find("re-evaluated 0/1 · private set 0/1 · re-evaluation "
                                                      "unverified 1/1 (unsigned)"),
            std::string::npos)
      << read_text(site() / "leaderboard.md");
  // The forgery had no digest at all: the same.
  write_raw_report("a", report(r, true));
  ASSERT_EQ(board().code, 0);
  EXPECT_EQ(checks()["reevaluated"], 0);
  EXPECT_EQ(checks()["reevaluation_unverified_reasons"], json::array({"unsigned"}));
}

TEST_F(LeaderboardVerifiers, AReportSignedByAnUntrustedKeyIsNotCounted) {
  const json r = write_result("a");
  write_report("a", report(r, true), "stranger");
  ASSERT_EQ(board().code, 0);
  const json c = checks();
  EXPECT_EQ(c["reevaluated"], 0);
  EXPECT_EQ(c["private_set"], 0);
  EXPECT_EQ(c["reevaluation_unverified_reasons"], json::array({"unknown key " + key_id("stranger")}));
}

// Issue 48: the page builder's own author key (LRA_AUTHOR_KEY_DIR) turns an
// untrusted signature into "re-evaluated by its author" — shown, never
// counted as a trusted verifier's, and unable to knock a result off the board
// when it says invalid.
TEST_F(LeaderboardVerifiers, AReportSignedByThePageBuildersAuthorKeyIsShownAsTheirs) {
  const json r = write_result("a");
  write_report("a", report(r, true), "stranger");
  auto as_author = [&] {
    fs::remove_all(site());
    return lrahost("leaderboard " + results().string() + " --out " + site().string() + " --trusted-verifiers " +
                       keys("maintainer").string(),
                   "LRA_AUTHOR_KEY_DIR=" + keys("stranger").string());
  };
  ASSERT_EQ(as_author().code, 0);
  json c = checks();
  EXPECT_EQ(c["reevaluated_by_author"], 1);
  EXPECT_EQ(c["reevaluated"], 0);
  EXPECT_EQ(c["reevaluation_unverified"], 0);
  EXPECT_NE(read_text(site() / "leaderboard.md").find("re-evaluated by its author 1/1 (not a trusted verifier)"),
            std::string::npos);
  write_report("a", report(r, false), "stranger");
  ASSERT_EQ(as_author().code, 0);
  c = checks();
  EXPECT_EQ(c["reevaluated_by_author"], 0);
  EXPECT_EQ(c["reevaluation_unverified_reasons"], json::array({"its author's re-evaluation found it invalid"}));
}

TEST_F(LeaderboardVerifiers, AReportSignedByATrustedVerifierCounts) {
  const json r = write_result("a");
  write_report("a", report(r, true), "maintainer");
  auto o = board();
  ASSERT_EQ(o.code, 0) << o.output;
  const json c = checks();
  EXPECT_EQ(c["reevaluated"], 1);
  EXPECT_EQ(c["private_set"], 1);
  EXPECT_EQ(c["verifiers"], json::array({key_id("maintainer")}));
  EXPECT_EQ(c["reevaluation_unverified"], 0);
  const std::string md = read_text(site() / "leaderboard.md");
  EXPECT_NE(md.find("re-evaluated 1/1 (by " + key_id("maintainer") + ") · private set 1/1"), std::string::npos) << md;
  EXPECT_EQ(md.find("unverified"), std::string::npos) << md;
  // The same report with no --trusted-verifiers: nothing to vouch for it.
  auto untrusting = board("");
  ASSERT_EQ(untrusting.code, 0) << untrusting.output;
  EXPECT_NE(untrusting.output.find("no --trusted-verifiers"), std::string::npos) << untrusting.output;
  EXPECT_EQ(checks()["reevaluated"], 0);
  EXPECT_EQ(checks()["reevaluation_unverified_reasons"], json::array({"unknown key " + key_id("maintainer")}));
}

// Issue 43: a trusted report vouches for the accuracy the verifier measured
// (test.published_accuracy: its own where its device was not the run's); the
// board shows that one, and the recorded one only where they agree or an
// older report names none. An untrusted report changes nothing.
TEST_F(LeaderboardVerifiers, ATrustedReportsPublishedAccuracyIsTheOneShown) {
  const json r = write_result("a");
  const double recorded = r["metrics"]["test_accuracy"].get<double>();
  json rep = report(r, true);
  rep["test"]["published_accuracy"] = recorded - 0.004;
  write_report("a", rep, "maintainer");
  ASSERT_EQ(board().code, 0);
  EXPECT_EQ(board_json()["open"][0]["tasks"]["listops"]["accuracies"], json::array({recorded - 0.004}));
  ASSERT_EQ(board("stranger").code, 0);
  EXPECT_EQ(board_json()["open"][0]["tasks"]["listops"]["accuracies"], json::array({recorded}));
  rep["test"].erase("published_accuracy");
  write_report("a", rep, "maintainer");
  ASSERT_EQ(board().code, 0);
  EXPECT_EQ(board_json()["open"][0]["tasks"]["listops"]["accuracies"], json::array({recorded}));
}

TEST_F(LeaderboardVerifiers, AnEditedTrustedReportIsUnverified) {
  const json r = write_result("a");
  // A trusted private-set failure, edited to a pass after it was signed.
  json rep = report(r, true);
  rep["private"]["flagged"] = true;
  const Ed25519PrivateKey maintainer = key("maintainer");
  json signed_rep = lra::host::seal_reevaluation(rep, &maintainer);
  signed_rep["private"]["flagged"] = false;
  write_raw_report("a", signed_rep);
  ASSERT_EQ(board().code, 0);
  EXPECT_EQ(checks()["private_set"], 0);
  EXPECT_EQ(checks()["reevaluated"], 0);
  EXPECT_EQ(checks()["reevaluation_unverified_reasons"], json::array({"bad signature"}));
  // Re-sealed after the edit (the digest is anyone's to recompute): the signature no longer covers it.
  signed_rep["digest"] = lra::host::compute_digest(signed_rep);
  write_raw_report("a", signed_rep);
  ASSERT_EQ(board().code, 0);
  EXPECT_EQ(checks()["reevaluated"], 0);
  EXPECT_EQ(checks()["reevaluation_unverified_reasons"], json::array({"bad signature"}));
  // The signature of one genuine report pasted into another: the same.
  json other = lra::host::seal_reevaluation(report(r, false), nullptr);
  other["signature"] = signed_rep["signature"];
  write_raw_report("a", other);
  ASSERT_EQ(board().code, 0);
  EXPECT_TRUE(board_json()["invalid"].empty());
  EXPECT_EQ(checks()["reevaluation_unverified_reasons"], json::array({"bad signature"}));
}

TEST_F(LeaderboardVerifiers, APlantedFailingReportCannotKnockAValidResultOffTheBoard) {
  const json r = write_result("a");
  for (const char* signer : {"", "stranger"}) {
    json rep = report(r, false);
    rep["reasons"] = {"this model cheated, says nobody in particular"};
    write_report("a", rep, signer);
    auto o = board();
    ASSERT_EQ(o.code, 0) << o.output;
    const json j = board_json();
    EXPECT_TRUE(j["invalid"].empty()) << signer << "\n" << j.dump(2);
    ASSERT_EQ(j["open"].size(), 1u) << signer;
    EXPECT_EQ(j["open"][0]["checks"]["reevaluation_unverified"], 1) << signer;
    EXPECT_EQ(pages().find("says nobody"), std::string::npos) << signer;
  }
}

TEST_F(LeaderboardVerifiers, ATrustedFailingReportListsTheResultAsInvalid) {
  const json r = write_result("a");
  write_report("a", report(r, false), "maintainer");
  auto o = board();
  ASSERT_EQ(o.code, 0) << o.output;
  const json j = board_json();
  EXPECT_TRUE(j["open"].empty()) << j.dump(2);
  ASSERT_EQ(j["invalid"].size(), 1u) << j.dump(2);
  const std::string reasons = j["invalid"][0]["reasons"].dump();
  EXPECT_NE(reasons.find("re-evaluation: metrics.test_accuracy is 30.00%, the submitted model scores 10.00%"),
            std::string::npos) << reasons;
  EXPECT_NE(reasons.find("signed by trusted verifier " + key_id("maintainer")), std::string::npos) << reasons;
}

// A baseline (leaderboard --baselines) that a trusted verifier's re-evaluation
// failed is refused like one that fails verify (exit 5, nothing written);
// with a passing report beside it, it is a baseline row credited with it.
TEST_F(LeaderboardVerifiers, ABaselineThatATrustedReEvaluationFailedIsRefused) {
  write_result("entry");
  const json b = write_result("baseline/transformer");
  write_report("baseline/transformer", report(b, false), "maintainer");
  fs::remove_all(site());
  const std::string args = "leaderboard " + (results() / "entry").string() + " --out " + site().string() +
                           " --trusted-verifiers " + keys("maintainer").string() + " --baselines " +
                           (results() / "baseline").string();
  auto o = lrahost(args);
  EXPECT_EQ(o.code, 5) << o.output;
  EXPECT_NE(o.output.find("failed a trusted re-evaluation"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find((results() / "baseline" / "transformer" / "result.json").string()), std::string::npos)
      << o.output;
  EXPECT_FALSE(fs::exists(site()));

  write_report("baseline/transformer", report(b, true), "maintainer");
  o = lrahost(args);
  ASSERT_EQ(o.code, 0) << o.output;
  const json j = board_json();
  ASSERT_EQ(j["open_baselines"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["open_baselines"][0]["checks"]["reevaluated"], 1) << j.dump(2);
}

TEST_F(LeaderboardVerifiers, ATrustedReportOfAnotherResultIsUnverifiedHere) {
  const json a = write_result("a");
  json other = *base_;
  other["seed"] = 7;
  const json b = write_result("b", other);
  write_report("a", report(b, false), "maintainer");  // b's genuine failure, copied beside a
  auto o = board();
  ASSERT_EQ(o.code, 0) << o.output;
  const json j = board_json();
  EXPECT_TRUE(j["invalid"].empty()) << j.dump(2);
  EXPECT_EQ(j["open"][0]["checks"]["reevaluation_unverified_reasons"], json::array({"re-evaluated another result"}));
}

TEST_F(LeaderboardVerifiers, SandboxOutputInAReportIsNeverPublished) {
  const json r = write_result("a");
  const std::string tail = "cat: reading /etc/shadow\n" + kSecret + ":19000:0:99999:7:::\n";
  json rep = report(r, false);
  rep["sandbox"]["log_tail"] = tail;
  // Exactly how verify --reevaluate quoted a failed sandbox run (issue 31).
  rep["reasons"] = {"the plugin's evaluation in the sandbox failed (exit 1): " + tail};
  rep["facts"] = {tail};
  for (const char* signer : {"", "stranger", "maintainer"}) {
    write_report("a", rep, signer);
    auto o = board();
    ASSERT_EQ(o.code, 0) << o.output;
    EXPECT_EQ(pages().find("SECRET"), std::string::npos) << signer;
    EXPECT_EQ(o.output.find("SECRET"), std::string::npos) << signer << "\n" << o.output;
  }
  // Trusted, the failure is shown, without what the sandbox printed.
  const json invalid = board_json()["invalid"];
  ASSERT_EQ(invalid.size(), 1u);
  EXPECT_EQ(invalid[0]["reasons"][0],
            "re-evaluation: the plugin's evaluation in the sandbox failed (exit 1): [sandbox output withheld]");
  // A passing trusted report's sandbox member is not read either.
  json passing = report(r, true);
  passing["sandbox"]["log_tail"] = tail;
  write_report("a", passing, "maintainer");
  ASSERT_EQ(board().code, 0);
  EXPECT_EQ(checks()["reevaluated"], 1);
  EXPECT_EQ(pages().find("SECRET"), std::string::npos);
}

TEST_F(LeaderboardVerifiers, AReportThatIsNotJsonOrALinkToASecretIsNotQuoted) {
  write_result("a");
  // The parser's message would quote the bytes it stopped at.
  write_text(results() / "a" / "reevaluation.json", "{\"schema\": " + kSecret + "}");
  auto o = board();
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(pages().find("SECRET"), std::string::npos);
  EXPECT_EQ(checks()["reevaluation_unverified_reasons"], json::array({"not valid JSON"}));
  // A planted symlink to a secret file is not followed.
  write_text(dir_->path() / "shadow", "{\"schema\": \"" + kSecret + "\"}");
  fs::remove(results() / "a" / "reevaluation.json");
  fs::create_symlink(dir_->path() / "shadow", results() / "a" / "reevaluation.json");
  o = board();
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(pages().find("SECRET"), std::string::npos);
  EXPECT_EQ(checks()["reevaluation_unverified_reasons"], json::array({"not a regular file of at most 1 MiB"}));
}

TEST_F(LeaderboardVerifiers, ATenMegabytePluginNameYieldsBoundedPages) {
  json r = *base_;
  r["plugin"]["name"] = std::string(10 << 20, 'A');
  r["plugin"]["version"] = std::string(1 << 20, 'V');
  r["overrides"] = {std::string(1 << 20, 'O')};
  r["plugin"]["options"] = {{std::string(1 << 20, 'k'), std::string(1 << 20, 'v')}};
  write_result("huge", r);
  json bad = r;
  bad["valid"] = false;
  bad["invalid_reasons"] = {std::string(1 << 20, 'R')};
  write_result("huge-invalid", bad);
  auto o = board();
  ASSERT_EQ(o.code, 0) << o.output.substr(0, 2000);
  for (const char* file : {"index.html", "leaderboard.md", "leaderboard.json"})
    EXPECT_LT(fs::file_size(site() / file), 200u << 10) << file;
  EXPECT_LT(o.output.size(), 20u << 10);
  // Cut with an ellipsis at the documented bound (200 bytes of a name).
  EXPECT_NE(read_text(site() / "leaderboard.md").find(std::string(200, 'A') + "…"), std::string::npos);
  EXPECT_EQ(read_text(site() / "leaderboard.md").find(std::string(201, 'A')), std::string::npos);
  // An honest name is untouched.
  write_result("huge", *base_);
  fs::remove_all(results() / "huge-invalid");
  ASSERT_EQ(board().code, 0);
  EXPECT_EQ(board_json()["open"][0]["plugin"], "transformer");
}

TEST_F(LeaderboardVerifiers, BadVerifierKeysAreRefusedBeforeAnythingIsWritten) {
  write_result("a");
  for (const fs::path& bad : {dir_->path() / "no-such-folder", results()}) {
    fs::remove_all(site());
    auto o = lrahost("leaderboard " + results().string() + " --out " + site().string() + " --trusted-verifiers " +
                     bad.string());
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_NE(o.output.find("--trusted-verifiers " + bad.string()), std::string::npos) << o.output;
    EXPECT_FALSE(fs::exists(site())) << bad;
  }
  // verify: --sign-key only with --reevaluate; a public key or /dev/zero is not a signing key (exit 2,
  // before the bundle is opened).
  auto alone = lrahost("verify " + results().string() + " --sign-key " + (keys("maintainer") / "lrahost-key.pem").string());
  EXPECT_EQ(alone.code, 2) << alone.output;
  EXPECT_NE(alone.output.find("--sign-key signs re-evaluation reports"), std::string::npos) << alone.output;
  for (const std::string& k : {(keys("maintainer") / "lrahost-key.pub.pem").string(), std::string("/dev/zero")}) {
    auto o = lrahost("verify --reevaluate " + (dir_->path() / "absent.tar").string() + " --no-sandbox --sign-key " + k);
    EXPECT_EQ(o.code, 2) << k << "\n" << o.output;
    EXPECT_NE(o.output.find(k), std::string::npos) << o.output;
  }
}

}  // namespace
}  // namespace lra::test
