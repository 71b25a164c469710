// Issue 31, "no flooding": what a verifier unpacks or generates for a
// submission it has not checked yet is bounded before anything is written.
// Each TEST names the attack it replays; each has an honest counterpart.
#include <unistd.h>

#include <fstream>
#include <functional>
#include <map>

#include <gtest/gtest.h>

#include "../support/raw_tar.h"
#include "common/sha256.h"
#include "lra/status.h"
#include "manifest/embedded.h"
#include "manifest/manifest.h"
#include "manifest/presets.h"
#include "manifest/releases.h"
#include "reevaluation/bundle.h"
#include "reevaluation/data_params_check.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using lra::test::RawTar;

struct Tmp {
  fs::path path;
  Tmp() {
    std::string t = "/tmp/lra-flooding-test-XXXXXX";
    path = mkdtemp(t.data());
  }
  ~Tmp() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  // What is in the folder besides the bundle itself (a refused extraction must leave nothing).
  std::vector<std::string> left_besides(const std::string& keep) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path))
      if (e.path().filename() != keep) out.push_back(e.path().filename().string());
    return out;
  }
};


const std::string kCode = "\x7f" "ELF plugin";
const std::string kPlugin = "plugins/" + sha256_hex(kCode) + ".so";

// bundle.json for `runs` run folders, each with result `result(i)` and a model of `model_bytes` bytes.
json index_for(int runs, int64_t model_bytes, const std::function<std::string(int)>& result) {
  json listed = json::object(), sizes = json::object(), list = json::array();
  for (int i = 0; i < runs; ++i) {
    const std::string dir = "r" + std::to_string(i);
    list.push_back({{"dir", dir}, {"plugin", kPlugin}});
    listed["runs/" + dir + "/result.json"] = sha256_hex(result(i));
    sizes["runs/" + dir + "/result.json"] = result(i).size();
    listed["runs/" + dir + "/model.pt"] = std::string(64, '0');
    sizes["runs/" + dir + "/model.pt"] = model_bytes;
  }
  listed[kPlugin] = sha256_hex(kCode);
  sizes[kPlugin] = kCode.size();
  return {{"schema", kBundleSchema}, {"runs", list}, {"files", listed}, {"sizes", sizes}};
}

std::string refusal(const fs::path& bundle, const fs::path& dest) {
  try {
    extract_bundle(bundle, dest);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

// A result the leaderboard can score: one seed of one plugin build on one task.
json scored_result(const std::string& task, int64_t seed, const std::string& digest) {
  return {{"plugin", {{"name", "transformer"}, {"sha256", "sha256:abc"}, {"options", json::object()}}},
          {"task", {{"name", task}, {"examples", {{"test", 100}}}, {"preset", "smoke"}}},
          {"seed", seed},
          {"division", "open"},
          {"metrics", {{"test_accuracy", 0.5}}},
          {"digest", digest}};
}

TEST(FloodingAttack, TarGzBombListingATenGigabyteModelIsRefusedOnItsIndex) {
  Tmp t;
  {
    RawTar tar(t.path / "bomb.tar.gz", true);
    tar.add("bundle.json", index_for(1, 10ll << 30, [](int) { return std::string("{}"); }).dump());
    tar.add("runs/r0/result.json", "{}");
    tar.add_zeros("runs/r0/model.pt", 64 << 20);  // 64 MiB of zeros: a few tens of KB compressed
  }
  ASSERT_LT(fs::file_size(t.path / "bomb.tar.gz"), 1u << 20);
  const std::string why = refusal(t.path / "bomb.tar.gz", t.path / "out");
  EXPECT_NE(why.find("'runs/r0/model.pt' is 10737418240 bytes, over the limit of 8589934592"), std::string::npos)
      << why;
  EXPECT_TRUE(t.left_besides("bomb.tar.gz").empty());
}

TEST(FloodingAttack, TarGzBombWhoseHeaderLiesAboutItsSizeIsRefusedAtThatHeader) {
  Tmp t;
  {
    RawTar tar(t.path / "bomb.tar.gz", true);
    tar.add("bundle.json", index_for(1, 1000, [](int) { return std::string("{}"); }).dump());
    tar.add("runs/r0/result.json", "{}");
    tar.add_zeros("runs/r0/model.pt", 64 << 20);  // bundle.json said 1000 bytes
  }
  const std::string why = refusal(t.path / "bomb.tar.gz", t.path / "out");
  EXPECT_NE(why.find("'runs/r0/model.pt' declares 67108864 bytes, bundle.json says 1000"), std::string::npos) << why;
  EXPECT_TRUE(t.left_besides("bomb.tar.gz").empty());
}

TEST(FloodingAttack, ModelsAddingUpToMoreThanTheBundleLimitAreRefusedOnTheIndex) {
  Tmp t;
  {
    RawTar tar(t.path / "b.tar", false);  // nine 8 GiB models: each within its limit, 72 GiB in all
    tar.add("bundle.json", index_for(9, 8ll << 30, [](int i) { return "{\"i\":" + std::to_string(i) + "}"; }).dump());
  }
  const std::string why = refusal(t.path / "b.tar", t.path / "out");
  EXPECT_NE(why.find("over the limit of 68719476736 for a whole bundle"), std::string::npos) << why;
}

TEST(FloodingAttack, TenThousandAndOneEntriesLeaveNothingBehind) {
  Tmp t;
  {
    // The index promises one run; 10,000 more files follow it.
    RawTar tar(t.path / "b.tar", false);
    tar.add("bundle.json", index_for(1, 1, [](int) { return std::string("{}"); }).dump());
    tar.add("runs/r0/result.json", "{}");
    for (int i = 0; i < 10000; ++i) tar.add("runs/x" + std::to_string(i) + "/result.json", "{}");
  }
  const std::string why = refusal(t.path / "b.tar", t.path / "out");
  EXPECT_NE(why.find("entry 'runs/x0/result.json' is not listed in bundle.json"), std::string::npos) << why;
  EXPECT_TRUE(t.left_besides("b.tar").empty());
  {
    // An index that lists 5,001 runs (10,003 entries) is refused before any of them.
    RawTar tar(t.path / "c.tar", false);
    tar.add("bundle.json", index_for(5001, 1, [](int i) { return "{\"i\":" + std::to_string(i) + "}"; }).dump());
  }
  const std::string many = refusal(t.path / "c.tar", t.path / "out");
  EXPECT_NE(many.find("lists 5001 runs, more than the 499 a bundle of at most 1000 entries can hold"),
            std::string::npos)
      << many;
}

TEST(FloodingAttack, OneRunListedFourTimesIsRefusedNamingTheFolder) {
  Tmp t;
  json idx = index_for(1, 1, [](int) { return std::string("{}"); });
  for (int i = 0; i < 3; ++i) idx["runs"].push_back(idx["runs"][0]);
  { RawTar tar(t.path / "b.tar", false); tar.add("bundle.json", idx.dump()); }
  const std::string why = refusal(t.path / "b.tar", t.path / "out");
  EXPECT_NE(why.find("runs[0] and runs[1] both name run folder 'r0'"), std::string::npos) << why;
}

TEST(FloodingAttack, OneRunCopiedIntoTwoFoldersIsRefusedNamingBoth) {
  Tmp t;
  const std::string result = scored_result("listops", 0, "sha256:d1").dump();
  // The model's listed SHA-256 is a placeholder: fix it so only the repetition is wrong.
  json idx = index_for(2, 1, [&](int) { return result; });
  for (const char* dir : {"r0", "r1"}) idx["files"][std::string("runs/") + dir + "/model.pt"] = sha256_hex("m");
  {
    RawTar tar(t.path / "b.tar", false);
    tar.add("bundle.json", idx.dump());
    for (const char* dir : {"r0", "r1"}) {
      tar.add(std::string("runs/") + dir + "/result.json", result);
      tar.add(std::string("runs/") + dir + "/model.pt", "m");
    }
    tar.add(kPlugin, kCode);
  }
  const std::string why = refusal(t.path / "b.tar", t.path / "out");
  EXPECT_NE(why.find("runs/r0 and runs/r1 hold the same result.json"), std::string::npos) << why;
  EXPECT_TRUE(t.left_besides("b.tar").empty());
}

TEST(FloodingAttack, TwoRunsOfOneTaskAndSeedAreRefusedByTheLeaderboardsRule) {
  // A run and a suite's run of the same task and seed: different digests, one trial.
  const auto why = repeated_run({{"runs/listops-0", scored_result("listops", 0, "sha256:aa")},
                                 {"suite/runs/listops/seed-0", scored_result("listops", 0, "sha256:bb")}});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("suite/runs/listops/seed-0 and runs/listops-0 are both seed 0 of transformer on listops"),
            std::string::npos)
      << *why;
  // The same result twice under two names.
  const auto copy = repeated_run({{"a", scored_result("listops", 0, "sha256:aa")},
                                  {"b", scored_result("listops", 0, "sha256:aa")}});
  ASSERT_TRUE(copy.has_value());
  EXPECT_NE(copy->find("a and b are the same run (result digest sha256:aa)"), std::string::npos) << *copy;
}

TEST(Flooding, DistinctRunsAndAnExistingEmptyDestinationAreKept) {
  // Honest: other seeds, other tasks, other options are other runs.
  json other_options = scored_result("listops", 0, "sha256:cc");
  other_options["plugin"]["options"] = {{"window", 8}};
  EXPECT_EQ(repeated_run({{"a", scored_result("listops", 0, "sha256:aa")},
                          {"b", scored_result("listops", 1, "sha256:bb")},
                          {"c", scored_result("text", 0, "sha256:dd")},
                          {"d", other_options}}),
            std::nullopt);
  // A refused bundle leaves an existing empty --out as it was; an accepted one fills it.
  Tmp t;
  fs::create_directory(t.path / "out");
  const std::string result = scored_result("listops", 0, "sha256:d1").dump();
  json idx = index_for(1, 1, [&](int) { return result; });
  idx["files"]["runs/r0/model.pt"] = sha256_hex("m");
  {
    RawTar tar(t.path / "bad.tar", false);
    tar.add("bundle.json", idx.dump());
    tar.add("runs/r0/result.json", result);
    tar.add("runs/r0/model.pt", "x");  // not the listed bytes
    tar.add(kPlugin, kCode);
  }
  refusal(t.path / "bad.tar", t.path / "out");
  EXPECT_TRUE(fs::is_directory(t.path / "out"));
  EXPECT_TRUE(fs::is_empty(t.path / "out"));
  {
    RawTar tar(t.path / "good.tar", false);
    tar.add("bundle.json", idx.dump());
    tar.add("runs/r0/result.json", result);
    tar.add("runs/r0/model.pt", "m");
    tar.add(kPlugin, kCode);
  }
  EXPECT_EQ(extract_bundle(t.path / "good.tar", t.path / "out"), idx);
  EXPECT_TRUE(fs::is_regular_file(t.path / "out" / "runs" / "r0" / "model.pt"));
  EXPECT_TRUE(fs::is_regular_file(t.path / "out" / "bundle.json"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(t.path)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"bad.tar", "good.tar", "out"}));
}

// --- task.data_params, before any data are generated ---

json pathfinder_result(const json& data_params, const std::string& division, const std::string& manifest_sha) {
  return {{"task", {{"name", "pathfinder"}, {"data_params", data_params}, {"manifest_sha256", manifest_sha}}},
          {"division", division},
          {"overrides", json::array()}};
}

json manifest_data(const std::string& task, const std::string& preset) {
  return to_json(load_preset(task, preset))["data"];
}

TEST(FloodingAttack, AnOpenPathfinderResultAskingForTwoBillionImagesIsRefused) {
  json dp = manifest_data("pathfinder", "smoke");
  dp["images"] = 2000000000;
  const auto why = check_result_data_params(pathfinder_result(dp, "open", "sha256:0"));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("task.data_params.images = 2000000000 is above the cap of 200000"), std::string::npos) << *why;
  try {
    require_result_data_params(pathfinder_result(dp, "open", "sha256:0"), "r/result.json");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find("r/result.json: task.data_params.images"), std::string::npos) << e.what();
  }
  // Keys no manifest of the task sets, and values that are not scalars, are refused too.
  json unknown = manifest_data("pathfinder", "smoke");
  unknown["resolution"] = 4096;
  EXPECT_NE(check_result_data_params(pathfinder_result(unknown, "open", "")).value_or("").find(
                "task.data_params.resolution = 4096 is not a data key any manifest of task 'pathfinder' sets"),
            std::string::npos);
  json nested = manifest_data("pathfinder", "smoke");
  nested["images"] = json::array({1, 2});
  EXPECT_NE(check_result_data_params(pathfinder_result(nested, "open", "")).value_or("").find("is not a scalar"),
            std::string::npos);
}

TEST(FloodingAttack, AClosedResultWithEditedDataParamsIsRefused) {
  const auto release = current_release("pathfinder");
  ASSERT_TRUE(release);
  json dp = manifest_data("pathfinder", "official");
  dp["images"] = 100;  // within the open cap, but not the official data
  const auto why = check_result_data_params(pathfinder_result(dp, "closed", release->sha256));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("task.data_params.images = 100 is not the official [data] of " + release->file), std::string::npos)
      << *why;
  // An open result that names the official manifest and overrides no data.* key: the same.
  EXPECT_TRUE(check_result_data_params(pathfinder_result(dp, "open", release->sha256)).has_value());
  // With a data.* override it is an open run on other data, within the caps.
  json overridden = pathfinder_result(dp, "open", release->sha256);
  overridden["overrides"] = {"data.images=100"};
  EXPECT_EQ(check_result_data_params(overridden), std::nullopt);
  // A closed claim that names no released manifest has no official data to make.
  EXPECT_NE(check_result_data_params(pathfinder_result(manifest_data("pathfinder", "official"), "closed", "sha256:0"))
                .value_or("")
                .find("is not a released official manifest"),
            std::string::npos);
}

TEST(Flooding, HonestDataParamsOfEveryReleasedAndSmokeManifestPass) {
  int checked = 0;
  for (const auto& rm : released_manifests()) {
    if (rm.task == kForgettingTask) continue;
    const json data = to_json(parse_manifest(find_embedded(rm.file)->text, rm.file))["data"];
    json r = {{"task", {{"name", rm.task}, {"data_params", data}, {"manifest_sha256", rm.sha256}}},
              {"division", "closed"}};
    EXPECT_EQ(check_result_data_params(r), std::nullopt) << rm.file;
    r["division"] = "open";
    EXPECT_EQ(check_result_data_params(r), std::nullopt) << rm.file;
    ++checked;
  }
  for (const auto& task : preset_tasks("smoke")) {
    if (task == kForgettingTask) continue;
    const json r = {{"task", {{"name", task}, {"data_params", manifest_data(task, "smoke")}, {"preset", "smoke"}}},
                    {"division", "open"},
                    {"overrides", {"train.steps=2"}}};
    EXPECT_EQ(check_result_data_params(r), std::nullopt) << task;
    ++checked;
  }
  EXPECT_GE(checked, 12);  // six tasks, each official and smoke
  // An open result may pick another data seed: a seed is not an amount of data.
  json seeded = manifest_data("pathfinder", "smoke");
  seeded["seed"] = 7;
  EXPECT_EQ(check_result_data_params(pathfinder_result(seeded, "open", "")), std::nullopt);
}

}  // namespace
}  // namespace lra::host
