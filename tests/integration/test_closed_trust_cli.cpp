// Issue 16: "closed" is reached only by the official protocol. Each test is
// an attack a dishonest submitter (or a careless one) could try; each must be
// refused, naming the field.
#include <unistd.h>

#include <set>
#include <tuple>
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "log_wait.h"
#include "tiny_run.h"
#include "manifest/manifest.h"
#include "manifest/official_data.h"
#include "manifest/releases.h"
#include "official_rules.h"
#include "results/result.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSmoke =
    "run --plugin transformer --task listops --preset smoke --set train.steps=20 --set train.eval_every=20 --threads 2";

// What a forger would copy from the official manifest of `task`.
json official_config(const std::string& task) {
  const auto rel = lra::host::current_release(task);
  return lra::host::to_json(lra::host::parse_manifest(
      read_text(fs::path(LRA_SOURCE_DIR) / "manifests" / rel->file), "official"));
}

lra::host::OfficialData official_row(const std::string& task) {
  const auto row = lra::host::find_official_data(lra::host::current_release(task)->version, task);
  if (!row) throw std::runtime_error("no official data row for " + task);
  return *row;
}

// A smoke result given the official manifest's configuration and the
// official split sizes of `task` (its own data and fingerprint kept).
json with_official_config(json r, const std::string& task) {
  r["config"] = official_config(task);
  r["config"]["train"]["seed"] = r["seed"];
  const auto row = official_row(task);
  r["task"]["examples"] = {{"train", row.train}, {"val", row.val}, {"test", row.test}};
  return r;
}

// A smoke result edited to claim the closed division under the current
// official manifest, and re-sealed (the digest is public arithmetic).
json claim_closed(json r, const std::string& task) {
  const auto rel = lra::host::current_release(task);
  r["division"] = "closed";
  r["division_reasons"] = json::array();
  r["overrides"] = json::array();
  r["task"]["preset"] = "official";
  r["task"]["manifest_sha256"] = rel->sha256;
  r["task"]["manifest_release"] = rel->version;
  r.erase("digest");
  return lra::host::seal(r);
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

TEST(ClosedTrust, AResealedSmokeResultClaimingClosedIsInvalidNamingEachField) {
  TempDir d;
  ASSERT_EQ(lrahost(kSmoke + " --out " + (d.path() / "run").string()).code, 0);
  const json forged = claim_closed(json::parse(read_text(d.path() / "run" / "result.json")), "listops");
  lra::host::write_result(d.path() / "forged", forged);
  auto v = lrahost("verify " + (d.path() / "forged").string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_TRUE(has(v.output, "open, INVALID")) << v.output;
  // The configuration: the smoke manifest's 2,000-token-free small model and 20 steps.
  EXPECT_TRUE(has(v.output, "config is not the official manifest's (release lra-v1.3)")) << v.output;
  EXPECT_TRUE(has(v.output, "config.model.layers is")) << v.output;
  EXPECT_TRUE(has(v.output, "config.train.steps is 20, the official manifest says 5000")) << v.output;
  // The split sizes and the data.
  EXPECT_TRUE(has(v.output, "task.examples.train is 8000, the official listops data (release lra-v1.3) have 96000"))
      << v.output;
  EXPECT_TRUE(has(v.output, "task.data_fingerprint is")) << v.output;
  EXPECT_TRUE(has(v.output, "not the fingerprint of the official data")) << v.output;
  // The budget's base: the smoke model's reference Transformer is not the official one.
  EXPECT_TRUE(has(v.output, "rules.reference_params is " + forged["rules"]["reference_params"].dump() +
                                ", the reference Transformer of the official manifest (release lra-v1.3) has " +
                                official_rules("listops")["reference_params"].dump() + " parameters"))
      << v.output;
}

TEST(ClosedTrust, OfficialConfigWithOtherDataIsStillInvalid) {
  TempDir d;
  ASSERT_EQ(lrahost(kSmoke + " --out " + (d.path() / "run").string()).code, 0);
  // Right counts, wrong data: only the fingerprint gives it away.
  json r = with_official_config(json::parse(read_text(d.path() / "run" / "result.json")), "listops");
  lra::host::write_result(d.path() / "forged", claim_closed(r, "listops"));
  auto v = lrahost("verify " + (d.path() / "forged").string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_FALSE(has(v.output, "config is not the official manifest's")) << v.output;
  EXPECT_FALSE(has(v.output, "task.examples.")) << v.output;
  EXPECT_TRUE(has(v.output, "task.data_fingerprint is \"" + r["task"]["data_fingerprint"].get<std::string>()))
      << v.output;
  // With the official fingerprint too, the file is indistinguishable from an
  // official run by its content: verify calls it closed (only re-evaluation
  // from the weights can tell, see test_submit_cli.cpp).
  r["task"]["data_fingerprint"] = official_row("listops").fingerprint;
  r["rules"] = official_rules("listops");
  lra::host::write_result(d.path() / "forged2", claim_closed(r, "listops"));
  auto v2 = lrahost("verify " + (d.path() / "forged2").string());
  EXPECT_TRUE(has(v2.output, "closed (release lra-v1.3), valid")) << v2.output;
}

// Issue 31: the parameter budget of a closed claim is the protocol's. A
// result that names a huge reference model (with the budget that is its
// arithmetic, room for any model) is refused by plain verify, as is one that
// raises the budget ratio; the official numbers verify.
TEST(ClosedTrust, AdversarialAClosedClaimCannotChooseItsReferenceModelOrRatio) {
  TempDir d;
  ASSERT_EQ(lrahost(kSmoke + " --out " + (d.path() / "run").string()).code, 0);
  json r = with_official_config(json::parse(read_text(d.path() / "run" / "result.json")), "listops");
  r["task"]["data_fingerprint"] = official_row("listops").fingerprint;
  const json rules = official_rules("listops");
  ASSERT_GT(rules["reference_params"].get<int64_t>(), 0);

  r["rules"] = {{"reference_params", 1000000000000}, {"param_budget_ratio", rules["param_budget_ratio"]},
                {"param_budget", lra::host::param_budget(1000000000000, rules["param_budget_ratio"].get<double>())}};
  lra::host::write_result(d.path() / "reference", claim_closed(r, "listops"));
  auto v = lrahost("verify " + (d.path() / "reference").string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_TRUE(has(v.output, "rules.reference_params is 1000000000000, the reference Transformer of the official "
                            "manifest (release lra-v1.3) has " + rules["reference_params"].dump() + " parameters"))
      << v.output;

  r["rules"] = rules;
  r["rules"]["param_budget_ratio"] = 1000.0;
  r["rules"]["param_budget"] = lra::host::param_budget(rules["reference_params"].get<int64_t>(), 1000.0);
  lra::host::write_result(d.path() / "ratio", claim_closed(r, "listops"));
  v = lrahost("verify " + (d.path() / "ratio").string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_TRUE(has(v.output, "rules.param_budget_ratio is 1000.0, the official manifest (release lra-v1.3) says 1.1"))
      << v.output;

  // The official numbers: the file is closed and valid (one seed of three: the submission is not complete).
  r["rules"] = rules;
  lra::host::write_result(d.path() / "honest", claim_closed(r, "listops"));
  v = lrahost("verify " + (d.path() / "honest").string());
  EXPECT_TRUE(has(v.output, "closed (release lra-v1.3), valid")) << v.output;
}

// The division an official run logs before its first step (the run itself is not needed).
std::string official_run_start(const std::string& args, const fs::path& dir) {
  fs::create_directories(dir);
  return lrahost_log_until("run --plugin transformer --preset official --threads 2 " + args + " --out " +
                               (dir / "run").string(),
                           dir / "run.out", "mixer options:");
}

TEST(ClosedTrust, AnOfficialRunOnNonOfficialDataIsOpenFromTheStart) {
  TempDir d;
  ASSERT_EQ(std::system((std::string(LRA_FIXTURE_DATA_BIN) + " text " + d.str() + " 1 >/dev/null 2>&1").c_str()), 0);
  const std::string out = official_run_start("--task text --data-dir " + d.str(), d.path());
  ASSERT_FALSE(out.empty()) << "the run could not be started";
  EXPECT_TRUE(has(out, "(official preset, open division)")) << out;
  EXPECT_TRUE(has(out, "open division: the data are not the official data: task.examples.train is 2000, the "
                       "official text data (release lra-v1.3) have 25000"))
      << out;
  EXPECT_FALSE(has(out, "closed division")) << out;
}

// LRA's release files are the data Table 1 was measured on: at the official
// split sizes a run on them is closed whatever their bytes (the host cannot
// know them), as Text, Retrieval and Image are; other sizes make it open.
// Data an lrahost generator wrote keep the fingerprint check.
TEST(ClosedTrust, AnOfficialRunOnLrasReleaseLayoutIsClosedAtTheOfficialSizes) {
  TempDir d;
  // The release layout (listops-1000/basic_{train,val,test}.tsv), written by
  // another seed than the official data's: other bytes, the official sizes.
  ASSERT_EQ(lrahost("data generate listops --seed 5 --out " + (d.path() / "full" / "listops-1000").string()).code, 0);
  const std::string full = official_run_start("--task listops --data-dir " + (d.path() / "full").string(), d.path() / "a");
  EXPECT_TRUE(has(full, "data: 96000 train / 2000 val / 2000 test from LRA release files at ")) << full;
  EXPECT_TRUE(has(full, "(official preset, closed division)")) << full;
  EXPECT_FALSE(has(full, "open division")) << full;

  ASSERT_EQ(lrahost("data generate listops --n 10000 --out " + (d.path() / "small" / "listops-1000").string()).code, 0);
  const std::string small = official_run_start("--task listops --data-dir " + (d.path() / "small").string(), d.path() / "b");
  EXPECT_TRUE(has(small, "(official preset, open division)")) << small;
  EXPECT_TRUE(has(small, "open division: the data are not the official data: task.examples.train is 9600, the "
                         "official listops data (release lra-v1.3) have 96000"))
      << small;
}

// Issue 46: files in the release's layout and at its counts that LRA's
// generators cannot have written are not its release. A ListOps set of
// another depth is open from the start (checked as any data: by its
// fingerprint), and Pathfinder images of the baseline set copied under the
// hard set's name are named for what their metadata say.
TEST(ClosedTrust, ReleaseLayoutFilesThatAreNotLrasReleaseAreNotClosed) {
  TempDir d;
  ASSERT_EQ(lrahost("data generate listops --set max_depth=12 --seed 5 --out " +
                    (d.path() / "deep" / "listops-1000").string())
                .code,
            0);
  const std::string deep = official_run_start("--task listops --data-dir " + (d.path() / "deep").string(), d.path() / "a");
  EXPECT_TRUE(has(deep, "data: 96000 train / 2000 val / 2000 test from ListOps files in LRA's release layout that "
                        "are NOT LRA's release: ")) << deep;
  EXPECT_TRUE(has(deep, "depth 12 > 10")) << deep;
  EXPECT_TRUE(has(deep, "(official preset, open division)")) << deep;
  EXPECT_TRUE(has(deep, "open division: the data are not the official data: their fingerprint")) << deep;
  EXPECT_FALSE(has(deep, "closed division")) << deep;

  // The easier set under the hard set's name, without the generator's mark (as copied from the archive).
  ASSERT_EQ(lrahost("data generate pathfinder --set contour_length=6 --n 200 --out " + (d.path() / "pf").string()).code, 0);
  const fs::path hard = d.path() / "hard" / "lra_release" / "pathfinder32" / "curv_contour_length_14";
  fs::create_directories(hard.parent_path());
  fs::copy(d.path() / "pf" / "pathfinder32" / "curv_baseline", hard, fs::copy_options::recursive);
  for (const auto& e : fs::directory_iterator(hard))
    if (e.is_regular_file() && e.path().extension() == ".txt") fs::remove(e.path());
  const auto check = lrahost("data check --task pathfinder --data-dir " + (d.path() / "hard").string());
  ASSERT_EQ(check.code, 0) << check.output;
  EXPECT_TRUE(has(check.output, "pathfinder32 images in LRA's release layout under curv_contour_length_14 that are "
                                "NOT LRA's curv_contour_length_14 set: the metadata give 200 of 200 images another "
                                "contour length than 14 (first rows: 6 at ")) << check.output;
  EXPECT_FALSE(has(check.output, "source        LRA release files")) << check.output;
}

// verify: a result on LRA's release files is checked on its counts; the flag
// must agree with the data source it names, and be a boolean.
TEST(ClosedTrust, ReleaseFilesAreCheckedOnTheirCountsAndTheFlagMustAgreeWithTheSource) {
  TempDir d;
  ASSERT_EQ(lrahost(kSmoke + " --out " + (d.path() / "run").string()).code, 0);
  json r = with_official_config(json::parse(read_text(d.path() / "run" / "result.json")), "listops");
  EXPECT_EQ(r["task"]["lra_release_files"], false);  // generated data
  r["task"]["lra_release_files"] = true;
  r["task"]["data_source"] = "LRA release files at /data/listops-1000 (the seed does not apply)";
  r["rules"] = official_rules("listops");
  lra::host::write_result(d.path() / "release", claim_closed(r, "listops"));
  auto v = lrahost("verify " + (d.path() / "release").string());
  EXPECT_TRUE(has(v.output, "closed (release lra-v1.3), valid")) << v.output;
  // The leaderboard ranks it but says its data were not checked (issue 46): verify
  // judges release files by their counts, which an easier set of the same layout
  // also has; only a trusted re-evaluation against the maintainer's copy checks
  // them. The open smoke run on generated data carries no such mark.
  auto site = lrahost("leaderboard " + (d.path() / "release").string() + " " + (d.path() / "run").string() +
                      " --out " + (d.path() / "site").string());
  ASSERT_EQ(site.code, 0) << site.output;
  const json board = json::parse(read_text(d.path() / "site" / "leaderboard.json"));
  ASSERT_EQ(board["closed"].size(), 1u) << board.dump();
  EXPECT_EQ(board["closed"][0]["checks"]["data_not_checked"], 1) << board["closed"][0]["checks"];
  ASSERT_EQ(board["open"].size(), 1u) << board.dump();
  EXPECT_EQ(board["open"][0]["checks"]["data_not_checked"], 0) << board["open"][0]["checks"];
  EXPECT_TRUE(has(read_text(d.path() / "site" / "leaderboard.md"), "data not checked 1/1"));

  r["task"]["data_source"] = "generated by the lrahost ListOps generator at /x";
  lra::host::write_result(d.path() / "disagree", claim_closed(r, "listops"));
  v = lrahost("verify " + (d.path() / "disagree").string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_TRUE(has(v.output, "task.lra_release_files is true but task.data_source")) << v.output;
  EXPECT_TRUE(has(v.output, "task.data_fingerprint is")) << v.output;  // and the fingerprint is checked again

  r["task"]["lra_release_files"] = "yes";
  lra::host::write_result(d.path() / "typed", claim_closed(r, "listops"));
  v = lrahost("verify " + (d.path() / "typed").string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_TRUE(has(v.output, "task.lra_release_files must be true or false")) << v.output;
}

// Issue 46: a result on LRA's release files is checked against the
// maintainer's own copy by verify --reevaluate. Re-evaluated against the
// files it trained on it is valid; against another set of the same layout
// and counts (another seed here, an easier Pathfinder difficulty in the
// issue's case) it is invalid, naming both fingerprints.
TEST(ClosedTrust, AdversarialAReleaseDataResultReevaluatedAgainstAnotherCopyIsInvalidNamingBoth) {
  TempDir d;
  for (const auto& [name, seed] : {std::pair<std::string, int>{"mine", 0}, {"other", 5}})
    ASSERT_EQ(lrahost("data generate listops --n 2000 --seed " + std::to_string(seed) + " --out " +
                      (d.path() / name / "listops-1000").string())
                  .code,
              0);
  // A small model on the official manifest, open by its overrides; the data are release files.
  auto run = lrahost("run --plugin transformer --task listops --data-dir " + (d.path() / "mine").string() +
                     " --set train.steps=2 --set train.batch_size=8 --set train.warmup=1 --set model.layers=1"
                     " --set model.d_model=32 --set model.ffn_dim=64 --set model.qkv_dim=32 --set model.heads=2"
                     " --set train.eval_every=2 --set train.eval_batch_size=50 --threads 2 --out " +
                     (d.path() / "run").string());
  ASSERT_EQ(run.code, 0) << run.output;
  const json r = json::parse(read_text(d.path() / "run" / "result.json"));
  ASSERT_EQ(r["task"]["lra_release_files"], true) << r["task"];
  const std::string recorded = r["task"]["data_fingerprint"];
  ASSERT_EQ(lrahost("submit " + (d.path() / "run").string() + " --out " + (d.path() / "sub.tar").string()).code, 0);

  auto same = lrahost("verify --reevaluate " + (d.path() / "sub.tar").string() + " --threads 2 --data-dir " +
                      (d.path() / "mine").string());
  EXPECT_EQ(same.code, 0) << same.output;
  EXPECT_TRUE(has(same.output, "1 of 1 run re-evaluated and valid")) << same.output;

  auto other = lrahost("verify --reevaluate " + (d.path() / "sub.tar").string() + " --threads 2 --data-dir " +
                       (d.path() / "other").string());
  EXPECT_EQ(other.code, 4) << other.output;
  EXPECT_TRUE(has(other.output, "are not the data the run used (task.data_fingerprint " + recorded + ")"))
      << other.output;
  const auto at = other.output.find("fingerprint sha256:");
  ASSERT_NE(at, std::string::npos) << other.output;
  EXPECT_NE(other.output.substr(at + 12, 71), recorded) << "the copy's own fingerprint is named too";
  // ... and each split that differs, with both of its fingerprints (every split, another seed).
  for (const char* split : {"train", "val", "test"}) {
    const std::string mine = r["task"]["split_fingerprints"][split];
    EXPECT_TRUE(has(other.output, std::string("the ") + split + " split differs (")) << other.output;
    EXPECT_TRUE(has(other.output, "task.split_fingerprints." + std::string(split) + " " + mine)) << other.output;
  }
}

TEST(ClosedTrust, AResultWithoutTaskExamplesIsInvalidAndTheLeaderboardListsIt) {
  TempDir d;
  ASSERT_EQ(lrahost(kSmoke + " --out " + (d.path() / "good").string()).code, 0);
  json r = json::parse(read_text(d.path() / "good" / "result.json"));
  r["task"].erase("examples");
  r.erase("digest");
  lra::host::write_result(d.path() / "bad", lra::host::seal(r));
  auto v = lrahost("verify " + (d.path() / "bad").string());
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_TRUE(has(v.output, "missing required field 'task.examples'")) << v.output;
  auto lb = lrahost("leaderboard " + (d.path() / "good").string() + " " + (d.path() / "bad").string() + " --out " +
                    (d.path() / "site").string());
  ASSERT_EQ(lb.code, 0) << lb.output;
  const json board = json::parse(read_text(d.path() / "site" / "leaderboard.json"));
  EXPECT_EQ(board["open"].size(), 1u);
  ASSERT_EQ(board["invalid"].size(), 1u) << board.dump(2);
  EXPECT_TRUE(has(board["invalid"][0].dump(), "task.examples")) << board["invalid"][0].dump();
}

}  // namespace
// s4d trains as the official S4D code trains it: log_dt, log_A_real and A_imag
// without weight decay and with the learning rate's peak capped at 1e-3, the
// rest as the manifest says; the groups are recorded, and verify refuses a
// record that raises a rate or invents a weight decay.
TEST(ClosedTrust, S4dRecordsTheOptimizerGroupsOfItsHintsAndVerifyChecksThem) {
  TempDir dir;
  const auto out = dir.path() / "run";
  std::string args = tiny_run_args(dir.str() + "/data", out.string());
  args.replace(args.find("--plugin transformer"), 20, "--plugin s4d");
  auto o = lrahost(args);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("optimizer hints: 3 parameter tensor(s)"), std::string::npos) << o.output;
  json r = json::parse(read_text(out / "result.json"));
  const json& g = r["optimizer"]["groups"];
  ASSERT_EQ(g.size(), 2u) << g.dump(1);
  EXPECT_EQ(g[0]["weight_decay"], r["config"]["train"]["weight_decay"]);
  EXPECT_EQ(g[0]["lr_factor"], 1.0);
  std::set<std::string> hinted;
  for (const auto& n : g[1]["names"]) hinted.insert(n.get<std::string>().substr(n.get<std::string>().rfind('.') + 1));
  EXPECT_EQ(hinted, (std::set<std::string>{"log_dt", "log_A_real", "A_imag"}));
  EXPECT_EQ(g[1]["weight_decay"], 0.0);
  // The tiny run's schedule peaks at 0.02 / sqrt(4) = 0.01: the cap makes it a tenth.
  EXPECT_NEAR(g[1]["lr_factor"].get<double>(), 0.1, 1e-9);
  EXPECT_EQ(g[0]["elements"].get<int64_t>() + g[1]["elements"].get<int64_t>(), r["plugin"]["params"]["total"]);
  auto v = lrahost("verify " + out.string());
  EXPECT_NE(v.output.find("open, valid"), std::string::npos) << v.output;
  // The leaderboard says so next to the score.
  auto lb = lrahost("leaderboard " + out.string() + " --out " + (dir.path() / "site").string());
  ASSERT_EQ(lb.code, 0) << lb.output;
  const json board = json::parse(read_text(dir.path() / "site" / "leaderboard.json"));
  ASSERT_EQ(board["open"].size(), 1u) << board.dump(1);
  EXPECT_TRUE(has(board["open"][0]["notes"].dump(), "listops: optimizer hints (3 tensor(s): no weight decay, learning rate x 0.1"))
      << board["open"][0].dump(1);

  for (const auto& [field, value, says] :
       {std::tuple<std::string, json, std::string>{"weight_decay", 0.3, "a hint may only take it to 0"},
        {"lr_factor", 2.0, "a hint may only lower the learning rate"}}) {
    json forged = r;
    forged["optimizer"]["groups"][1][field] = value;
    forged.erase("digest");
    const auto bad = dir.path() / ("forged-" + field);
    lra::host::write_result(bad, lra::host::seal(forged));
    auto f = lrahost("verify " + bad.string());
    EXPECT_EQ(f.code, 4) << f.output;
    EXPECT_NE(f.output.find(says), std::string::npos) << f.output;
  }
}

}  // namespace lra::test
