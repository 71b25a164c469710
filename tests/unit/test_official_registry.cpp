// The division of a run from its manifest bytes against the release registry:
// any released official manifest is closed and named; anything else is open,
// compared with the current release.
#include <gtest/gtest.h>

#include <string>

#include <torch/utils.h>
#include <torch/types.h>

#include "runs/official_registry.h"
#include "manifest/embedded.h"
#include "manifest/presets.h"
#include "manifest/releases.h"

using namespace lra::host;

namespace {

std::string embedded_text(const std::string& name) {
  const EmbeddedFile* f = find_embedded(name);
  if (!f) ADD_FAILURE() << name << " is not embedded";
  return f ? std::string(f->text) : std::string();
}

}  // namespace

TEST(OfficialRegistry, AnyReleasedManifestIsClosedAndNamed) {
  std::optional<ReleasedManifest> release;
  RunChoices c = run_choices("pathfinder", "manifest old.toml", embedded_text("released/lra-v1.1/pathfinder.toml"), &release);
  ASSERT_TRUE(release.has_value());
  EXPECT_EQ(release->version, "lra-v1.1");
  EXPECT_EQ(release->superseded_by, "lra-v1.3");
  EXPECT_EQ(classify_run(c).name, "closed");

  c = run_choices("pathfinder", "preset 'official'", std::string(find_official("pathfinder")->text), &release);
  ASSERT_TRUE(release.has_value());
  EXPECT_EQ(release->version, "lra-v1.3");
  EXPECT_TRUE(release->current);
  EXPECT_EQ(classify_run(c).name, "closed");
}

TEST(OfficialRegistry, OtherBytesAreOpenAgainstTheCurrentRelease) {
  std::optional<ReleasedManifest> release;
  std::string edited = std::string(find_official("image")->text) + "\n# a comment is an edit too\n";
  const RunChoices c = run_choices("image", "manifest mine.toml", edited, &release);
  EXPECT_FALSE(release.has_value());
  const RunDivision d = classify_run(c);
  EXPECT_EQ(d.name, "open");
  ASSERT_EQ(d.reasons.size(), 1u);
  EXPECT_NE(d.reasons[0].find("released/lra-v1.3/image.toml (release lra-v1.3)"), std::string::npos) << d.reasons[0];
  // A released manifest of another task is not this task's.
  run_choices("image", "manifest x.toml", std::string(find_official("pathx")->text), &release);
  EXPECT_FALSE(release.has_value());
}

TEST(OfficialRegistry, VerifyLookupAndSeedsFollowTheRegistry) {
  const auto listops = registry_official("listops");
  ASSERT_EQ(listops.size(), 6u);  // lra-v1.0, 1.1, 1.2, lra-spt-v1.0 (another protocol), lra-v1.3, lra-spt-v1.1
  EXPECT_EQ(listops[3].release, "lra-spt-v1.0");
  EXPECT_EQ(listops[3].protocol, "lra-spt-v1");
  EXPECT_EQ(listops[3].superseded_by, "lra-spt-v1.1");
  EXPECT_EQ(listops[2].protocol, "lra-v1");
  EXPECT_EQ(listops[0].release, "lra-v1.0");
  EXPECT_EQ(listops[0].superseded_by, "lra-v1.3");
  EXPECT_EQ(listops[1].release, "lra-v1.1");
  EXPECT_EQ(listops[1].superseded_by, "lra-v1.3");  // its bytes were carried unchanged into lra-v1.2
  EXPECT_EQ(listops[4].release, "lra-v1.3");
  EXPECT_EQ(listops[4].superseded_by, "");
  EXPECT_EQ(listops[5].release, "lra-spt-v1.1");
  EXPECT_EQ(listops[5].protocol, "lra-spt-v1");
  EXPECT_EQ(listops[5].superseded_by, "");
  EXPECT_TRUE(registry_official("my-task").empty());
  EXPECT_EQ(registry_trial_seeds("listops", listops[0].sha256), std::vector<int64_t>{0});
  EXPECT_EQ(registry_trial_seeds("listops", ""), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_FALSE(registry_trial_seeds("listops", std::string(64, '0')).has_value());
}

// Issue 31: the base of a closed result's budget is counted by the host from
// each released manifest, never read from the file. The ListOps figure is the
// one test_backbone.cpp derives from LRA's architecture; every LRA release has
// a count, the forgetting protocol (no classifier) none; counting leaves the
// global random stream where it was.
TEST(OfficialRegistry, EveryLraReleaseCarriesItsReferenceTransformerCount) {
  for (const auto& r : released_manifests()) {
    for (const auto& m : registry_official(r.task)) {
      if (m.sha256 != r.sha256) continue;
      if (r.protocol == "lra-v1" || r.protocol == "lra-spt-v1")  // both fine-tune LRA's classifier
        EXPECT_GT(m.reference_params, 0) << r.version << " " << r.task;
      else
        EXPECT_EQ(m.reference_params, -1) << r.version << " " << r.task;
    }
  }
  for (const auto& m : registry_official("listops")) EXPECT_EQ(m.reference_params, 8948746) << m.release;
  torch::manual_seed(11);
  const auto expected = torch::rand({4});
  torch::manual_seed(11);
  (void)registry_official("text");
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));
}
