// lra_host_results: system facts, digest and sealing, result.json writing,
// and `verify` (schema, digest, division, parameter budget, validity).
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/sha256.h"
#include "lra/status.h"
#include "results/result.h"
#include "rules/rules.h"
#include "results/system_info.h"
#include "results/submission.h"
#include "results/verify.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace lra::host;

namespace {

const std::string kOfficialListops = sha256_hex("official listops manifest");

// An older release of listops, superseded: its results must keep verifying.
const std::string kOldListops = sha256_hex("listops manifest of an older release");

std::vector<OfficialManifest> fake_official(const std::string& task) {
  if (task == "listops")
    return {{"lra-v1.0", kOldListops, "an older release", "lra-v1.1"}, {"lra-v1.1", kOfficialListops, "", ""}};
  if (task == "image") return {{"lra-v1.1", sha256_hex("official image manifest"), "", ""}};
  return {};
}

// A complete closed, valid result as the trainer writes it (unsealed).
json closed_result() {
  return json{
      {"schema", kResultSchema},
      {"division", "closed"},
      {"division_reasons", json::array()},
      {"valid", true},
      {"invalid_reasons", json::array()},
      {"host",
       {{"version", "0.1.0"},
        {"git_revision", "0123456789abcdef0123456789abcdef01234567"},
        {"git_dirty", false},
        {"sdk_abi", "1.0"},
        {"torch_version", "2.3.1"},
        {"cuda_version", nullptr},
        {"build_type", "Release"},
        {"compiler", "GNU 12.2.0"}}},
      {"system", system_info()},
      {"plugin",
       {{"name", "transformer"},
        {"version", "1.0.0"},
        {"file", "/opt/lrahost/lib/lrahost/plugins/libtransformer.so"},
        {"sha256", sha256_hex("plugin bytes")},
        {"options", json::object()},
        {"params", {{"total", 1000000}, {"mixer", 262144}}},
        {"capabilities", {"causal", "attention_probs"}}}},
      {"task",
       {{"name", "listops"},
        {"manifest", "builtin:lra-v1/listops.toml"},
        {"manifest_sha256", kOfficialListops},
        {"preset", "official"},
        {"data_fingerprint", sha256_hex("listops data")},
        {"data_source", "generated (seed 0)"},
        {"examples", {{"train", 96000}, {"val", 2000}, {"test", 2000}}}}},
      {"rules", {{"reference_params", 1000000}, {"param_budget_ratio", 1.1}, {"param_budget", 1100000}}},
      {"seed", 0},
      {"overrides", json::array()},
      {"config", {{"model", {{"layers", 4}, {"d_model", 512}}}, {"train", {{"steps", 5000}, {"lr", 0.05}}}}},
      {"metrics",
       {{"test_accuracy", 0.3637},
        {"best_val_accuracy", 0.3712},
        {"best_val_step", 4000},
        {"final_train_loss", 1.7234},
        {"final_train_accuracy", 0.3525},
        {"majority_class_rate", 0.171}}},
      {"history",
       {{{"step", 1000}, {"train_loss", 2.1}, {"val_accuracy", 0.2}},
        {{"step", 2000}, {"train_loss", 1.9}, {"val_accuracy", 0.31}},
        {{"step", 4000}, {"train_loss", 1.72}, {"val_accuracy", 0.3712}}}},
      {"timing",
       {{"wall_seconds", 812.5}, {"train_seconds", 700.25}, {"steps_per_second", 7.14},
        {"peak_memory_bytes", nullptr}}},
      {"command_line", {"lrahost", "run", "--plugin", "transformer", "--task", "listops"}},
      {"started_at", "2025-01-01T10:00:00Z"},
      {"finished_at", "2025-01-01T10:13:32Z"},
  };
}

json open_result() {
  json r = closed_result();
  r["division"] = "open";
  r["overrides"] = {"train.steps=100"};
  r["division_reasons"] = {"--set train.steps=100 overrides the official manifest"};
  r["config"]["train"]["steps"] = 100;
  return r;
}

bool any_reason_contains(const VerifyReport& r, const std::string& needle) {
  return std::any_of(r.reasons.begin(), r.reasons.end(),
                     [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

std::string all_reasons(const VerifyReport& r) {
  std::string s;
  for (const auto& x : r.reasons) s += "\n  - " + x;
  return s;
}

class ResultFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "-" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');  // parameterised tests
    dir_ = fs::temp_directory_path() / ("lra-test-results-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void spit(const fs::path& p, const std::string& s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << s;
  }
  static json read_json(const fs::path& p) {
    std::ifstream in(p);
    return json::parse(in);
  }

  fs::path dir_;
};

}  // namespace

// --- system facts -------------------------------------------------------------------

TEST(SystemInfo, ParsesProcAndOsReleaseFiles) {
  const char* cpuinfo =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\n"
      "model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\nflags\t\t: fpu vme\n\n"
      "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\n";
  EXPECT_EQ(detail::cpuinfo_model(cpuinfo), "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz");
  EXPECT_EQ(detail::cpuinfo_model("processor : 0\nHardware : BCM2835\n"), "BCM2835");
  EXPECT_EQ(detail::cpuinfo_model("processor : 0\n"), std::nullopt);

  EXPECT_EQ(detail::meminfo_total_bytes("MemTotal:       16318948 kB\nMemFree: 1 kB\n"),
            std::optional<std::uint64_t>(16318948ull * 1024));
  EXPECT_EQ(detail::meminfo_total_bytes("MemFree: 1 kB\n"), std::nullopt);

  EXPECT_EQ(detail::os_release_pretty_name("NAME=\"Debian GNU/Linux\"\n"
                                           "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n"),
            "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(detail::os_release_pretty_name("PRETTY_NAME=Alpine\n"), "Alpine");
  EXPECT_EQ(detail::os_release_pretty_name("ID=x\n"), std::nullopt);
}

TEST(SystemInfo, RecordsCpuMemoryOsButNotTheHostname) {
  const json s = system_info();
  ASSERT_TRUE(s.is_object());
  ASSERT_TRUE(s.contains("cpu"));
  EXPECT_TRUE(s["cpu"]["logical_cores"].is_number_integer());
  EXPECT_GT(s["cpu"]["logical_cores"].get<int>(), 0);
  EXPECT_TRUE(s["cpu"]["model"].is_string() || s["cpu"]["model"].is_null());
  EXPECT_TRUE(s["memory_total_bytes"].is_number_integer());
  EXPECT_GT(s["memory_total_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_TRUE(s["os"]["kernel"].is_string());
  EXPECT_TRUE(s["os"]["arch"].is_string());
  EXPECT_TRUE(s["os"].contains("name"));

  struct utsname u {};
  ASSERT_EQ(::uname(&u), 0);
  const std::string hostname = u.nodename;
  std::vector<const json*> stack{&s};
  while (!stack.empty()) {
    const json* v = stack.back();
    stack.pop_back();
    if (v->is_string()) {
      EXPECT_NE(v->get<std::string>(), hostname) << "hostname recorded";
    }
    if (v->is_structured()) {
      for (auto it = v->begin(); it != v->end(); ++it) {
        if (v->is_object()) {
          EXPECT_NE(it.key(), "hostname");
          EXPECT_NE(it.key(), "nodename");
        }
        stack.push_back(&*it);
      }
    }
  }
}

// --- digest and sealing -----------------------------------------------------------------

TEST(Digest, IgnoresTheDigestMemberAndKeyOrderButNotContent) {
  const json r = closed_result();
  const std::string d = compute_digest(r);
  EXPECT_EQ(d.rfind("sha256:", 0), 0u);
  EXPECT_EQ(d.size(), 7u + 64u);

  json with_digest = r;
  with_digest["digest"] = "sha256:whatever";
  EXPECT_EQ(compute_digest(with_digest), d);

  // Parsed back from any formatting, the digest is the same.
  EXPECT_EQ(compute_digest(json::parse(r.dump(4))), d);
  EXPECT_EQ(compute_digest(json::parse(r.dump())), d);

  json changed = r;
  changed["metrics"]["test_accuracy"] = 0.3638;
  EXPECT_NE(compute_digest(changed), d);
}

TEST(Digest, SealAddsDigestAndRejectsNonObjects) {
  const json sealed = seal(closed_result());
  ASSERT_TRUE(sealed.contains("digest"));
  EXPECT_EQ(sealed["digest"], compute_digest(closed_result()));
  EXPECT_EQ(seal(sealed)["digest"], sealed["digest"]);  // resealing is stable
  EXPECT_THROW(seal(json::array()), lra::Error);
}

TEST(ParamBudget, FloorOfReferenceTimesRatio) {
  EXPECT_EQ(param_budget(1000000, 1.1), 1100000);
  EXPECT_EQ(param_budget(100, 1.1), 110);
  EXPECT_EQ(param_budget(3, 1.1), 3);  // 3.3
  EXPECT_EQ(param_budget(7, 0.5), 3);  // 3.5
  EXPECT_EQ(param_budget(19, 1.15), 21);  // 21.85
  EXPECT_EQ(param_budget(20, 1.15), 23);  // 22.999999999999996 in doubles: exactly 23 by hand
}

TEST_F(ResultFiles, WriteResultIsPrettyAtomicAndRoundTrips) {
  const json sealed = seal(closed_result());
  const fs::path out = dir_ / "runs" / "listops-transformer-0";  // created on demand
  const fs::path file = write_result(out, sealed);
  EXPECT_EQ(file, out / "result.json");
  EXPECT_EQ(read_json(file), sealed);

  std::ifstream in(file);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, "{");
  EXPECT_EQ(second.rfind("  \"", 0), 0u) << second;  // two-space indent

  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"result.json"});
}

TEST_F(ResultFiles, WriteResultRefusesUnsealedOrChangedResults) {
  EXPECT_THROW(write_result(dir_, closed_result()), lra::Error);
  json sealed = seal(closed_result());
  sealed["seed"] = 1;
  EXPECT_THROW(write_result(dir_, sealed), lra::Error);
  EXPECT_FALSE(fs::exists(dir_ / "result.json"));
}

// --- verify: valid results ----------------------------------------------------------------

TEST_F(ResultFiles, SealedClosedResultVerifiesValidClosed) {
  const fs::path file = write_result(dir_, seal(closed_result()));
  const VerifyReport r = verify_result_file(file, fake_official);
  EXPECT_EQ(r.path, file.string());
  EXPECT_TRUE(r.readable);
  EXPECT_EQ(r.division, "closed");
  EXPECT_TRUE(r.valid) << all_reasons(r);
  EXPECT_TRUE(r.reasons.empty());

  const json j = to_json(r);
  EXPECT_EQ(j["division"], "closed");
  EXPECT_EQ(j["valid"], true);
}

TEST_F(ResultFiles, ReformattingTheFileKeepsItValid) {
  const fs::path file = write_result(dir_, seal(closed_result()));
  spit(file, read_json(file).dump());  // compact, same content
  EXPECT_TRUE(verify_result_file(file, fake_official).valid);
}

TEST(Verify, OptionalFieldsMayBeAbsentOrNull) {
  json r = closed_result();
  r["plugin"].erase("file");
  r["plugin"].erase("capabilities");
  r["plugin"]["params"].erase("mixer");
  r["task"].erase("preset");
  r["task"].erase("data_source");
  r["metrics"]["best_val_step"] = nullptr;
  r["metrics"].erase("majority_class_rate");
  r["timing"] = json::object();
  r["host"]["cuda_version"] = "12.1";
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_TRUE(v.valid) << all_reasons(v);
  EXPECT_EQ(v.division, "closed");
}

TEST(Verify, OpenResultWithOverridesIsValidOpen) {
  const VerifyReport r = verify_result_json(seal(open_result()), fake_official);
  EXPECT_TRUE(r.valid) << all_reasons(r);
  EXPECT_EQ(r.division, "open");
}

TEST(Verify, OpenResultOfAnUnofficialTaskIsValidOpen) {
  json r = open_result();
  r["overrides"] = json::array();
  r["task"]["name"] = "my-task";
  r["task"]["manifest"] = "/home/me/my-task.toml";
  r["task"]["manifest_sha256"] = sha256_hex("mine");
  r["division_reasons"] = {"task my-task has no official manifest"};
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_TRUE(v.valid) << all_reasons(v);
  EXPECT_EQ(v.division, "open");
}

TEST(Verify, OpenClaimIsNeverPromotedToClosed) {
  json r = closed_result();
  r["division"] = "open";
  r["division_reasons"] = {"smoke preset"};
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_TRUE(v.valid) << all_reasons(v);
  EXPECT_EQ(v.division, "open");
}

TEST(Verify, ManifestHashComparisonIgnoresCaseAndPrefix) {
  json r = closed_result();
  std::string upper = kOfficialListops;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  r["task"]["manifest_sha256"] = "sha256:" + upper;
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_TRUE(v.valid) << all_reasons(v);
  EXPECT_EQ(v.division, "closed");
}

// --- verify: edits after the run -------------------------------------------------------------

class EditedResult : public ResultFiles, public ::testing::WithParamInterface<std::pair<const char*, json>> {};

TEST_P(EditedResult, IsInvalidWithTheDigestReason) {
  const fs::path file = write_result(dir_, seal(closed_result()));
  json j = read_json(file);
  const json::json_pointer ptr(GetParam().first);
  ASSERT_TRUE(j.contains(ptr)) << GetParam().first;
  j[ptr] = GetParam().second;
  spit(file, j.dump(2));

  const VerifyReport r = verify_result_file(file, fake_official);
  EXPECT_TRUE(r.readable);
  EXPECT_FALSE(r.valid);
  EXPECT_TRUE(any_reason_contains(r, "content was edited after the run")) << all_reasons(r);
  EXPECT_TRUE(any_reason_contains(r, "digest " + j["digest"].get<std::string>() + " != recomputed sha256:"))
      << all_reasons(r);
  EXPECT_TRUE(any_reason_contains(r, "claims valid = true")) << all_reasons(r);
}

INSTANTIATE_TEST_SUITE_P(
    Fields, EditedResult,
    ::testing::Values(std::make_pair("/metrics/test_accuracy", json(0.99)),
                      std::make_pair("/plugin/name", json("performer")),
                      std::make_pair("/history/1/val_accuracy", json(0.9)),
                      std::make_pair("/seed", json(1)),
                      std::make_pair("/plugin/params/total", json(10)),
                      std::make_pair("/system/cpu/logical_cores", json(4096)),
                      std::make_pair("/command_line/0", json("/usr/bin/lrahost"))));

TEST(Verify, ForgedDigestIsCaught) {
  json r = seal(closed_result());
  r["digest"] = "sha256:" + std::string(64, '0');
  const VerifyReport v = verify_result_json(r, fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "content was edited after the run (digest sha256:000")) << all_reasons(v);
}

// --- verify: division rules ----------------------------------------------------------------------

TEST(Verify, ClosedClaimWithOverridesIsInvalid) {
  json r = closed_result();
  r["overrides"] = {"train.steps=100"};
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.division, "open");
  EXPECT_TRUE(any_reason_contains(v, "division is \"closed\" but overrides is not empty"))
      << all_reasons(v);
  EXPECT_TRUE(any_reason_contains(v, "train.steps=100")) << all_reasons(v);
}

TEST(Verify, ClosedClaimWithWrongManifestHashIsInvalidNamingBothHashes) {
  json r = closed_result();
  const std::string other = sha256_hex("edited manifest");
  r["task"]["manifest_sha256"] = other;
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.division, "open");
  EXPECT_TRUE(any_reason_contains(v, "task.manifest_sha256 " + other + " is not a released official manifest"))
      << all_reasons(v);
  EXPECT_TRUE(any_reason_contains(v, "lra-v1.0 " + kOldListops + ", lra-v1.1 " + kOfficialListops)) << all_reasons(v);
  EXPECT_FALSE(v.release.has_value());
}

// Released manifests are frozen: a result under an older release stays
// closed, and verify names the release from the hash, not from the file.
TEST(Verify, ClosedResultUnderAnOlderReleaseStaysClosedAndNamesIt) {
  json r = closed_result();
  r["task"]["manifest_sha256"] = kOldListops;
  VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_TRUE(v.valid) << all_reasons(v);
  EXPECT_EQ(v.division, "closed");
  ASSERT_TRUE(v.release.has_value());
  EXPECT_EQ(v.release->release, "lra-v1.0");
  EXPECT_EQ(v.release->superseded_by, "lra-v1.1");
  EXPECT_EQ(to_json(v)["release"], "lra-v1.0");

  v = verify_result_json(seal(closed_result()), fake_official);
  ASSERT_TRUE(v.release.has_value());
  EXPECT_EQ(v.release->release, "lra-v1.1");
  EXPECT_EQ(v.release->superseded_by, "");

  // A file naming another release than its hash is not trusted.
  r["task"]["manifest_release"] = "lra-v1.1";
  v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.division, "open");
  EXPECT_TRUE(any_reason_contains(v, "task.manifest_release \"lra-v1.1\" does not match the manifest's hash, which "
                                     "is release \"lra-v1.0\"")) << all_reasons(v);
  r["task"]["manifest_release"] = "lra-v1.0";
  EXPECT_TRUE(verify_result_json(seal(r), fake_official).valid);
}

TEST(Verify, ClosedClaimForTaskWithoutOfficialManifestIsInvalid) {
  json r = closed_result();
  r["task"]["name"] = "my-task";
  VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.division, "open");
  EXPECT_TRUE(any_reason_contains(v, "no official manifest for task \"my-task\"")) << all_reasons(v);

  // An empty lookup knows no official manifest at all.
  v = verify_result_json(seal(closed_result()), OfficialLookup{});
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.division, "open");
}

TEST(Verify, ClosedClaimWithDivisionReasonsOrSmokePresetIsInvalid) {
  json r = closed_result();
  r["division_reasons"] = {"third-party task"};
  VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "division_reasons is not empty")) << all_reasons(v);

  r = closed_result();
  r["task"]["preset"] = "smoke";
  v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.division, "open");
  EXPECT_TRUE(any_reason_contains(v, "task.preset is \"smoke\"")) << all_reasons(v);
}

TEST(Verify, UnknownDivisionIsInvalid) {
  json r = closed_result();
  r["division"] = "premier";
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.division, "open");
  EXPECT_TRUE(any_reason_contains(v, "division is \"premier\"")) << all_reasons(v);
}

// --- verify: parameter budget ------------------------------------------------------------------------

TEST(Verify, OverBudgetIsInvalid) {
  json r = closed_result();
  r["plugin"]["params"]["total"] = 1100001;
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.division, "closed");  // the division checks still pass; validity does not
  EXPECT_TRUE(any_reason_contains(v, "plugin.params.total 1100001 exceeds rules.param_budget 1100000"))
      << all_reasons(v);

  r["plugin"]["params"]["total"] = 1100000;  // exactly at the budget is allowed
  EXPECT_TRUE(verify_result_json(seal(r), fake_official).valid);
}

TEST(Verify, BudgetNotMatchingTheRuleIsInvalid) {
  json r = closed_result();
  r["rules"]["param_budget"] = 5000000;  // a budget raised to fit a large model
  r["plugin"]["params"]["total"] = 4000000;
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "rules.param_budget 5000000 != floor(rules.reference_params 1000000 * "
                                     "rules.param_budget_ratio 1.1) = 1100000"))
      << all_reasons(v);
}

TEST(Verify, MixerParamsAboveTotalAreInvalid) {
  json r = closed_result();
  r["plugin"]["params"]["mixer"] = 2000000;
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "plugin.params.mixer")) << all_reasons(v);
}

// --- verify: shape -------------------------------------------------------------------------------------

class MissingField : public ::testing::TestWithParam<const char*> {};

TEST_P(MissingField, IsInvalidNamingTheField) {
  json r = closed_result();
  const std::string pointer = GetParam();
  const json::json_pointer ptr(pointer);
  ASSERT_TRUE(r.contains(ptr));
  r[ptr.parent_pointer()].erase(ptr.back());
  std::string dotted = pointer.substr(1);
  std::replace(dotted.begin(), dotted.end(), '/', '.');

  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_TRUE(v.readable);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "missing required field '" + dotted + "'")) << all_reasons(v);
}

INSTANTIATE_TEST_SUITE_P(
    Fields, MissingField,
    ::testing::Values("/schema", "/division", "/division_reasons", "/valid", "/invalid_reasons", "/host",
                      "/system", "/plugin", "/plugin/name", "/plugin/version", "/plugin/sha256",
                      "/plugin/options", "/plugin/params", "/plugin/params/total", "/task", "/task/name",
                      "/task/manifest", "/task/manifest_sha256", "/task/data_fingerprint", "/rules",
                      "/rules/reference_params", "/rules/param_budget_ratio", "/rules/param_budget", "/seed",
                      "/overrides", "/config", "/metrics", "/metrics/test_accuracy",
                      "/metrics/best_val_accuracy", "/metrics/final_train_loss",
                      "/metrics/final_train_accuracy", "/history", "/timing", "/command_line", "/started_at",
                      "/finished_at"));

TEST(Verify, MissingDigestIsInvalid) {
  const VerifyReport v = verify_result_json(closed_result(), fake_official);  // never sealed
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "missing required field 'digest'")) << all_reasons(v);
}

TEST(Verify, WronglyTypedFieldsAreInvalidNamingFieldAndValue) {
  struct Case {
    const char* pointer;
    json value;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"/seed", "zero", "field 'seed' must be an integer, found string \"zero\""},
      {"/valid", "yes", "field 'valid' must be a boolean, found string \"yes\""},
      {"/plugin/params/total", 1.5, "field 'plugin.params.total' must be an integer, found number 1.5"},
      {"/overrides", json::array({1}), "field 'overrides[0]' must be a string, found number 1"},
      {"/history", json::array({1, 2}), "field 'history[0]' must be an object"},
      {"/host/cuda_version", 12, "field 'host.cuda_version' must be a string or null"},
      {"/plugin/sha256", "not-a-hash", "field 'plugin.sha256' must be a SHA-256 hex digest"},
      {"/metrics/test_accuracy", 1.5, "field 'metrics.test_accuracy' must be an accuracy in [0, 1], found 1.5"},
      {"/metrics/best_val_accuracy", -0.1, "'metrics.best_val_accuracy' must be an accuracy in [0, 1]"},
      {"/metrics/final_train_loss", -1.0, "'metrics.final_train_loss' must not be negative"},
      {"/metrics/final_train_accuracy", "0.5", "must be a number, found string \"0.5\""},
      {"/config", json::array(), "field 'config' must be an object, found an array"},
  };
  for (const Case& c : cases) {
    json r = closed_result();
    r[json::json_pointer(c.pointer)] = c.value;
    const VerifyReport v = verify_result_json(seal(r), fake_official);
    EXPECT_FALSE(v.valid) << c.pointer;
    EXPECT_TRUE(any_reason_contains(v, c.expected)) << c.pointer << all_reasons(v);
  }
}

TEST(Verify, SchemaMismatchIsInvalid) {
  json r = closed_result();
  r["schema"] = "lrahost.result/v2";
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "schema is \"lrahost.result/v2\", expected \"lrahost.result/v1\""))
      << all_reasons(v);
}

// --- verify: the host's own verdict ---------------------------------------------------------------------

TEST(Verify, ResultRecordedInvalidStaysInvalidWithItsReasons) {
  json r = closed_result();
  r["valid"] = false;
  r["invalid_reasons"] = {"training diverged (loss is NaN at step 1200)"};
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "training diverged")) << all_reasons(v);
}

TEST(Verify, ValidFlagAndInvalidReasonsMustAgree) {
  json r = closed_result();
  r["valid"] = false;  // no reason given
  VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "valid is false but invalid_reasons is empty")) << all_reasons(v);

  r = closed_result();
  r["invalid_reasons"] = {"something"};  // but still claims valid
  v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "valid is true but invalid_reasons is not empty")) << all_reasons(v);
}

TEST(Verify, ClaimingValidWhenChecksFailSaysSo) {
  json r = closed_result();
  r["plugin"]["params"]["total"] = 2000000;
  const VerifyReport v = verify_result_json(seal(r), fake_official);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(any_reason_contains(v, "the file claims valid = true, but 1 check fails")) << all_reasons(v);
}

// --- verify: unreadable files -------------------------------------------------------------------------------

TEST_F(ResultFiles, GarbageFilesAreUnreadable) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"garbage.json", "this is not json {"},
      {"empty.json", ""},
      {"truncated.json", seal(closed_result()).dump(2).substr(0, 200)},
      {"array.json", "[1, 2, 3]"},
  };
  for (const auto& [name, content] : files) {
    spit(dir_ / name, content);
    const VerifyReport v = verify_result_file(dir_ / name, fake_official);
    EXPECT_EQ(v.path, (dir_ / name).string());
    EXPECT_FALSE(v.readable) << name;
    EXPECT_FALSE(v.valid) << name;
    EXPECT_EQ(v.division, "") << name;
    EXPECT_FALSE(v.reasons.empty()) << name;
  }
  EXPECT_TRUE(any_reason_contains(verify_result_file(dir_ / "garbage.json", fake_official), "not valid JSON"));

  const VerifyReport missing = verify_result_file(dir_ / "nope.json", fake_official);
  EXPECT_FALSE(missing.readable);
  EXPECT_TRUE(any_reason_contains(missing, "cannot read")) << all_reasons(missing);

  const VerifyReport directory = verify_result_file(dir_, fake_official);
  EXPECT_FALSE(directory.readable);
}

// --- collecting files ----------------------------------------------------------------------------------------

TEST_F(ResultFiles, CollectResultFilesWalksDirectoriesSortedAndKeepsFiles) {
  for (const char* p : {"suite/text/seed1/result.json", "suite/listops/seed0/result.json",
                        "suite/listops/seed1/result.json", "suite/listops/seed1/checkpoint/other.json",
                        "suite/image/notes.txt", "single/my-result.json"}) {
    spit(dir_ / p, "{}");
  }
  const auto files = collect_result_files({dir_ / "single" / "my-result.json", dir_ / "suite"});
  const std::vector<fs::path> expected = {
      dir_ / "single/my-result.json",
      dir_ / "suite/listops/seed0/result.json",
      dir_ / "suite/listops/seed1/result.json",
      dir_ / "suite/text/seed1/result.json",
  };
  EXPECT_EQ(files, expected);

  // The same file reached twice is listed once.
  const auto again = collect_result_files({dir_ / "suite/text/seed1/result.json", dir_ / "suite" / "text"});
  EXPECT_EQ(again, std::vector<fs::path>{dir_ / "suite/text/seed1/result.json"});
}

TEST_F(ResultFiles, CollectResultFilesRejectsMissingPathsAndEmptyFolders) {
  const fs::path missing = dir_ / "no-such-run";
  try {
    collect_result_files({missing});
    FAIL() << "expected lra::Error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
  fs::create_directories(dir_ / "empty");
  try {
    collect_result_files({dir_ / "empty"});
    FAIL() << "expected lra::Error";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
}

// --- submissions: the files as one set ---------------------------------------

namespace {

// Seeds per released manifest: the older listops release had one trial seed.
std::optional<std::vector<int64_t>> fake_seeds(const std::string& task, const std::string& sha) {
  if (task == "listops" && sha == kOldListops) return std::vector<int64_t>{0};
  if (task == "listops" || task == "image") return std::vector<int64_t>{0, 1, 2};
  return std::nullopt;
}

class Submission : public ResultFiles {
 protected:
  // Writes a sealed result for `seed` under dir_/<name>/result.json.
  fs::path add(const std::string& name, json r, int64_t seed) {
    r["seed"] = seed;
    return write_result(dir_ / name, seal(r));
  }
  SubmissionReport check() {
    return verify_submission(read_submission(collect_result_files({dir_}), fake_official), fake_seeds);
  }
  static std::string reasons(const SubmissionReport& r) {
    std::string s;
    for (const auto& x : r.reasons) s += "\n  - " + x;
    return s;
  }
  static bool mentions(const SubmissionReport& r, const std::string& needle) {
    return std::any_of(r.reasons.begin(), r.reasons.end(),
                       [&](const std::string& s) { return s.find(needle) != std::string::npos; });
  }
};

}  // namespace

// Each release's own trial seeds: the older listops release asked for seed 0
// alone, so one result under it is complete, and seeds 1 and 2 are extra.
TEST_F(Submission, SeedsAreThoseOfTheReleaseEachResultUsed) {
  json old = closed_result();
  old["task"]["manifest_sha256"] = kOldListops;
  add("old-0", old, 0);
  auto rep = check();
  EXPECT_TRUE(rep.valid) << reasons(rep);
  EXPECT_EQ(rep.division, "closed");
  add("old-1", old, 1);
  rep = check();
  EXPECT_FALSE(rep.valid);
  EXPECT_TRUE(mentions(rep, "seed(s) 1 are not among the official trial seeds 0")) << reasons(rep);
}

TEST_F(Submission, AllOfficialSeedsFromOneBuildIsClosedValid) {
  for (int64_t s : {0, 1, 2}) add("listops-" + std::to_string(s), closed_result(), s);
  const auto rep = check();
  EXPECT_EQ(rep.files, 3u);
  EXPECT_TRUE(rep.valid) << reasons(rep);
  EXPECT_EQ(rep.division, "closed");
}

TEST_F(Submission, MissingSeedIsReportedByNumber) {
  add("a", closed_result(), 0);
  add("b", closed_result(), 2);
  const auto rep = check();
  EXPECT_FALSE(rep.valid);
  EXPECT_EQ(rep.division, "open");
  EXPECT_TRUE(mentions(rep, "transformer on listops: seeds incomplete: missing 1 of 0, 1, 2")) << reasons(rep);
}

TEST_F(Submission, RepeatedAndUnofficialSeedsAreReported) {
  for (int64_t s : {0, 1, 2}) add("x" + std::to_string(s), closed_result(), s);
  add("again", closed_result(), 1);
  add("extra", closed_result(), 7);
  const auto rep = check();
  EXPECT_FALSE(rep.valid);
  EXPECT_TRUE(mentions(rep, "seed 1 appears twice")) << reasons(rep);
  EXPECT_TRUE(mentions(rep, "seed(s) 7 are not among the official trial seeds")) << reasons(rep);
}

TEST_F(Submission, DifferentHostBuildsAreReported) {
  add("a", closed_result(), 0);
  json other = closed_result();
  other["host"]["git_revision"] = "ffffffffffffffffffffffffffffffffffffffff";
  add("b", other, 1);
  add("c", closed_result(), 2);
  const auto rep = check();
  EXPECT_FALSE(rep.valid);
  EXPECT_TRUE(mentions(rep, "host identity differs: host/git_revision")) << reasons(rep);
}

TEST_F(Submission, OnePluginNameWithTwoBuildsIsReported) {
  add("a", closed_result(), 0);
  json other = closed_result();
  other["plugin"]["sha256"] = sha256_hex("other plugin bytes");
  add("b", other, 1);
  add("c", closed_result(), 2);
  const auto rep = check();
  EXPECT_FALSE(rep.valid);
  EXPECT_TRUE(mentions(rep, "plugin 'transformer' differs between files")) << reasons(rep);
}

TEST_F(Submission, AnInvalidFileMakesTheSubmissionInvalid) {
  for (int64_t s : {0, 1}) add("ok" + std::to_string(s), closed_result(), s);
  const fs::path edited = add("edited", closed_result(), 2);
  json r = read_json(edited);
  r["metrics"]["test_accuracy"] = 0.99;  // after sealing: the digest no longer matches
  spit(edited, r.dump(2));
  const auto rep = check();
  EXPECT_FALSE(rep.valid);
  EXPECT_TRUE(mentions(rep, "not every result file is valid")) << reasons(rep);
}

TEST_F(Submission, OpenResultsNeedNoCompleteSeeds) {
  add("a", open_result(), 5);
  const auto rep = check();
  EXPECT_TRUE(rep.valid) << reasons(rep);
  EXPECT_EQ(rep.division, "open");
}
