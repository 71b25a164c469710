// manifests/official-data.toml: every released manifest has a row, and the
// carried fingerprints of generated data are what `lrahost run --preset
// official` computes today (the generators have not drifted). ListOps and
// Pathfinder are regenerated here (about 5 s and 25 s on 2 cores); Path-X
// (200,000 images of 128x128) is checked by scripts/official-fingerprints.


#include <gtest/gtest.h>

#include "cli_harness.h"
#include "log_wait.h"
#include "manifest/official_data.h"
#include "manifest/presets.h"
#include "manifest/releases.h"

#include <set>

namespace lra::test {
namespace {

TEST(OfficialData, EveryReleasedManifestHasARow) {
  for (const auto& r : lra::host::released_manifests()) {
    if (r.protocol != "lra-v1") continue;  // the forgetting curve's data are a corpus, not a split
    const auto row = lra::host::find_official_data(r.version, r.task);
    EXPECT_TRUE(row) << r.version << " " << r.task << " has no row in manifests/official-data.toml";
  }
}

// Starts the official run, reads the fingerprint it logs once its data are
// loaded (generated on first use), and stops it there.
std::string official_run_fingerprint(const std::string& task, const TempDir& d) {
  const std::string out = lrahost_log_until("run --plugin transformer --task " + task +
                                                " --preset official --threads 2 --data-dir " + d.str() + " --out " +
                                                (d.path() / task).string(),
                                            d.path() / (task + ".out"), "data fingerprint: ");
  const auto at = out.find("data fingerprint: ");
  if (at == std::string::npos) return "(not logged) " + out;
  return out.substr(at + 18, 71);
}

class GeneratedData : public ::testing::TestWithParam<const char*> {};

TEST_P(GeneratedData, CarriedFingerprintIsWhatAnOfficialRunComputes) {
  const std::string task = GetParam();
  const auto current = lra::host::current_release(task);
  ASSERT_TRUE(current);
  const auto row = lra::host::find_official_data(current->version, task);
  ASSERT_TRUE(row);
  ASSERT_FALSE(row->fingerprint.empty());
  TempDir d;
  EXPECT_EQ(official_run_fingerprint(task, d), row->fingerprint);
}

INSTANTIATE_TEST_SUITE_P(ListOpsAndPathfinder, GeneratedData, ::testing::Values("listops", "pathfinder"));

// A protocol with [settings] (mad-v1): every setting of every task has its
// row, and a closed run at a setting (its --set assignments) computes that
// row's fingerprint, not the baseline's.
TEST(OfficialData, EverySettingOfAReleasedManifestHasItsOwnRow) {
  int rows = 0;
  for (const auto& r : lra::host::released_manifests()) {
    if (r.protocol != "mad-v1") continue;
    const auto m = lra::host::load_preset(r.task, "official");
    std::set<std::string> fingerprints;
    auto check = [&](const std::string& setting) {
      const auto row = lra::host::find_official_data(r.version, r.task, setting);
      EXPECT_TRUE(row) << r.version << " " << r.task << " setting " << setting << " has no row";
      if (!row) return;
      ++rows;
      EXPECT_TRUE(fingerprints.insert(row->fingerprint).second) << r.task << " " << setting << " repeats a fingerprint";
    };
    check("baseline");
    for (const auto& s : m.settings) check(s.name);
  }
  EXPECT_EQ(rows, 66);
}

TEST(OfficialData, AnOfficialRunAtASettingComputesThatSettingsFingerprint) {
  const auto current = lra::host::current_release("mad_memorization");
  ASSERT_TRUE(current);
  const auto row = lra::host::find_official_data(current->version, "mad_memorization", "vocab_size-1024");
  ASSERT_TRUE(row);
  TempDir d;
  const std::string out = lrahost_log_until(
      "run --plugin transformer --task mad_memorization --preset official --set data.vocab_size=1024 --threads 2 "
      "--out " + (d.path() / "m").string(),
      d.path() / "m.out", "data fingerprint: ");
  const auto at = out.find("data fingerprint: ");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_EQ(out.substr(at + 18, 71), row->fingerprint);
}

}  // namespace
}  // namespace lra::test
