// Released official manifests are frozen (docs/releases.md). The pins below
// are written out independently of manifests/releases.toml: editing a
// released manifest, or the registry's record of it, fails here. A new
// release appends its rows; existing rows never change.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/sha256.h"
#include "lra/status.h"
#include "manifest/embedded.h"
#include "manifest/presets.h"
#include "manifest/releases.h"

using namespace lra::host;

namespace {

struct Pin {
  const char* version;
  const char* task;
  const char* sha256;
};

const std::vector<Pin>& pins() {
  static const std::vector<Pin> p = {
    {"lra-v1.0", "listops", "a06563611e35894cdb1bb2c08fc7614672126c52912a3eaeb43b11c900999e86"},
    {"lra-v1.0", "text", "9c0b660103f964df4a86b46841b022174fd666c7bbd24e7f02a7035120d2b466"},
    {"lra-v1.0", "retrieval", "ce08f5ab8ea399f301a94dc2975d8f1ea356793b9a89f5901ea85c8e4de5d473"},
    {"lra-v1.0", "image", "54981b4b368f09609b4a17d385fe3469e4f3e20e230d32061be4c39fe5a04539"},
    {"lra-v1.0", "pathfinder", "eadb034347e770a1380c11b89054a1b47da767a49078fdbf57b217602e476e2a"},
    {"lra-v1.0", "pathx", "95d38c95f035b80ca70792005efb269c503f95373aa0dc32df8fb9333050796a"},
    {"lra-v1.1", "listops", "70d8e9d0d2830cad9846622237b315a56409038126e1437f18e948d60ef0196c"},
    {"lra-v1.1", "text", "d45afda686d2946b3a0a687e241e029d3967b31b62a6df572383419d57ce1c54"},
    {"lra-v1.1", "retrieval", "d9e55eeb46599834aba76cf58bcb09a79e3ab49345ba8136b4eba3db50e7a2e7"},
    {"lra-v1.1", "image", "7cfd4cc6be30294d65a137c321f93d2cac5f80ba433f8dbbc8777dcf2feaddcc"},
    {"lra-v1.1", "pathfinder", "a78a12ec1dcac00a3783ae9b4969d8d2938aca946a7ca272fb6a31798147a8a3"},
    {"lra-v1.1", "pathx", "642102cc78115126d8a4ebd9011b4ceffd0ac847ccfa347f6a880f0fd9363fed"},
    {"lra-v1.2", "listops", "70d8e9d0d2830cad9846622237b315a56409038126e1437f18e948d60ef0196c"},
    {"lra-v1.2", "text", "d45afda686d2946b3a0a687e241e029d3967b31b62a6df572383419d57ce1c54"},
    {"lra-v1.2", "retrieval", "d9e55eeb46599834aba76cf58bcb09a79e3ab49345ba8136b4eba3db50e7a2e7"},
    {"lra-v1.2", "image", "533c83a4f1b24ab0f2339e75bbed7e4858356f37df0c8aeed5c733f46354379b"},
    {"lra-v1.2", "pathfinder", "3e08c5d5491d2ce1d8f660f5852f286644e6422ebdc7d40453747b5e029d55bc"},
    {"lra-v1.2", "pathx", "2030c58a31e5a35862a89bbe285f6d5890c547133fe32067cd59dd479ad48ccf"},
    {"forgetting-v1.0", "forgetting", "352cb21eb9f35229afc869803143ba3998238f7f796783d6aeecbb2823ee5242"},
    {"forgetting-v1.1", "forgetting", "1920bca89c6fea9dcfc8b18d258637b10a79938210ae99bf39b1cc2687fe2fa4"},
    {"forgetting-v1.2", "forgetting", "4aa795166a9f5a23e2d938c81dd871c68c25f86d97711c954289e67bdc011e79"},
    {"lra-spt-v1.0", "listops", "ae84a565f6b0ce3c8b0279c8fb625b00239a9ab91100cddc1db702b9a3f219cf"},
    {"lra-spt-v1.0", "text", "c6b1965e48d4e58fda1b371796f6a7e125921e0f9d245ee0abf1fd45e0404c05"},
    {"lra-spt-v1.0", "retrieval", "1a06aed27b13de7fc8b4feb566e59eb01bbe47ba8261561f322a33908b9906e2"},
    {"lra-spt-v1.0", "image", "63980023d25fbab03bc9b1347a3a824480c5de911b6f14dd2bc840df3f61d4e5"},
    {"lra-spt-v1.0", "pathfinder", "2600135cc2294dcc5191c2a82ee740ed342a68a9f6a2e2088d13da4a5f402416"},
    {"lra-spt-v1.0", "pathx", "ef682e869c9f48e2de80232cefb4428176deec4a0f27e2e69dd64e7fa1d905d2"},
    {"lra-v1.3", "listops", "34f0e4f99ba6be5c0ea3c4ebb4046464ac5c5ccada889be6287aae1610ea8c72"},
    {"lra-v1.3", "text", "eb7c1fe2d4dafb37e9cc9f9c6a9f2fbc9932abcd942bfa0e72c13f23df852146"},
    {"lra-v1.3", "retrieval", "c55b9b2397812cde7b368f89c24c9a7258d9ac034366048d763d544ffb4d5d4b"},
    {"lra-v1.3", "image", "1625164a30e276e29194e5799e0fd80e15b0318bef9fbf7eef245eeb2548afff"},
    {"lra-v1.3", "pathfinder", "271aa51104b560cd29a750e296b619e70142775326d6daa9b9dc183d47652a70"},
    {"lra-v1.3", "pathx", "b37aa44776ab5c21b9f155d15450d79a4955a6aebdc27edb94804350c20b503a"},
    {"lra-spt-v1.1", "listops", "2b49e02570aa733c48df8f30c0ffc301b8484707e1d2bd37c0e1cf3a69b4f2fd"},
    {"lra-spt-v1.1", "text", "8b6ef74ed6d6dbb78d717a50acd09d97512ea4fe054409381566ba02c6e99fdf"},
    {"lra-spt-v1.1", "retrieval", "d1cfaee55294e63a503cc3383bf86ad5c5180528e5e65276c0d4e6830b5a2ff6"},
    {"lra-spt-v1.1", "image", "eaa178652630cb0fe81a79dae74ae89fc9ad64e54effee43ea42e51fb989b7fb"},
    {"lra-spt-v1.1", "pathfinder", "55ffe069a8b824113f385cf5302649a00ebdf2bc2a2307e2f1cd734baf0ece79"},
    {"lra-spt-v1.1", "pathx", "9f160ffc1bf091f1529cd1a5926fb3dbd4274c4f99f80a2c6cd000905a8c8e27"},
    {"zoology-v1.0", "mqar", "48e87e7fba22a9e496b70f430fea4e89fe609308630fa4c1c0919566b47be098"},
    {"mad-v1.0", "mad_recall", "e0983f922dac008bfd64ba91275fb2632731ed6e0e2c20d972a967b3420fddbf"},
    {"mad-v1.0", "mad_fuzzy_recall", "82964a20faf812193ec9186aa37547988203150ac95ec7ab885efb955b3a3832"},
    {"mad-v1.0", "mad_noisy_recall", "5c7e00acc770b93d8a933a6ab1b37a9d744ab5139ed83619740f70032a993f82"},
    {"mad-v1.0", "mad_selective_copy", "50df4604b42d509544e53d2cca94a622e4f7951ff4ba04a8334752b5b0730364"},
    {"mad-v1.0", "mad_compression", "b0181843c6350514cd78202f5a151f2a0e5b3f303328fbd15c76f7f712de7907"},
    {"mad-v1.0", "mad_memorization", "557dd9e83dadcaee950e8a88b3e196a75a5784a30ebf80b96f76da43d7eb8014"},
  };
  return p;
}

std::string registry_text() {
  const EmbeddedFile* f = find_embedded(kReleasesFile);
  return f ? std::string(f->text) : std::string();
}

}  // namespace

TEST(Releases, EveryReleasedManifestKeepsItsPinnedBytes) {
  const auto& all = released_manifests();
  ASSERT_EQ(all.size(), pins().size()) << "a release was added or removed: pin its manifests here";
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].version, pins()[i].version) << i;
    EXPECT_EQ(all[i].task, pins()[i].task) << i;
    EXPECT_EQ(all[i].sha256, pins()[i].sha256) << all[i].version << " " << all[i].task;
    const EmbeddedFile* f = find_embedded(all[i].file);
    ASSERT_NE(f, nullptr) << all[i].file;
    EXPECT_EQ(sha256_hex(f->text), pins()[i].sha256)
        << all[i].file << " was edited: released bytes never change; restore it and make a new release";
  }
}

// --preset official reads lra-v1/<task>.toml and forgetting-v1/forgetting.toml:
// they must be byte for byte the current release.
TEST(Releases, WorkingOfficialManifestsAreTheCurrentRelease) {
  std::vector<std::string> tasks = preset_tasks("official");
  tasks.push_back(kForgettingTask);
  for (const auto& task : tasks) {
    const EmbeddedFile* working = find_official(task);
    ASSERT_NE(working, nullptr) << task;
    const auto current = current_release(task);
    ASSERT_TRUE(current.has_value()) << task << " has no current release";
    EXPECT_EQ(sha256_hex(working->text), current->sha256)
        << working->name << " differs from release " << current->version
        << ": an official manifest changed without a new release (docs/releases.md)";
  }
}

// --protocol spt --preset official reads lra-spt-v1/<task>.toml: the current
// lra-spt-v1 release, whose [model], [train], [data] and [rules] are the
// current lra-v1 manifest's (the fine-tuning is LRA's own protocol).
TEST(Releases, WorkingSelfPretrainingManifestsAreTheCurrentReleaseAndFineTuneAsLra) {
  const auto tasks = preset_tasks("official", "spt");
  ASSERT_EQ(tasks.size(), 6u);
  for (const auto& task : tasks) {
    const EmbeddedFile* working = find_embedded(preset_file(task, "official", "spt"));
    ASSERT_NE(working, nullptr) << task;
    const auto current = current_release(task, "lra-spt-v1");
    ASSERT_TRUE(current.has_value()) << task;
    EXPECT_EQ(sha256_hex(working->text), current->sha256) << working->name;
    Manifest spt = load_preset(task, "official", "spt");
    const Manifest lra = load_preset(task, "official");
    ASSERT_TRUE(spt.pretrain.present) << task;
    EXPECT_FALSE(lra.pretrain.present) << task;
    spt.pretrain = {};
    EXPECT_EQ(to_json(spt), to_json(lra)) << task << ": the fine-tuning must be LRA's protocol";
    // The from-scratch protocol's current release is still lra-v1's.
    EXPECT_EQ(current_release(task)->protocol, "lra-v1") << task;
  }
  // The smoke presets likewise: smoke-spt/<task> fine-tunes as smoke/<task>.
  const auto smoke = preset_tasks("smoke", "spt");
  EXPECT_EQ(smoke, preset_tasks("official", "spt"));
  for (const auto& task : smoke) {
    Manifest spt = load_preset(task, "smoke", "spt");
    ASSERT_TRUE(spt.pretrain.present) << task;
    spt.pretrain = {};
    EXPECT_EQ(to_json(spt), to_json(load_preset(task, "smoke"))) << task;
  }
}

TEST(Releases, FindsEachReleaseByHashNewestFirst) {
  // The measured ListOps run of docs/measured/ was made under lra-v1.0.
  auto r = find_release("listops", "a06563611e35894cdb1bb2c08fc7614672126c52912a3eaeb43b11c900999e86");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->version, "lra-v1.0");
  EXPECT_FALSE(r->current);
  EXPECT_EQ(r->superseded_by, "lra-v1.3");
  EXPECT_EQ(release_trial_seeds("listops", r->sha256), std::vector<int64_t>{0});  // no rules.seeds yet: [train.seed]
  // lra-v1.2 carries lra-v1.1's ListOps bytes unchanged: they belong to the later release,
  // superseded by lra-v1.3, which names the reference settings table.
  r = find_release("listops", "SHA256:70D8E9D0D2830CAD9846622237B315A56409038126E1437F18E948D60EF0196C");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->version, "lra-v1.2");
  EXPECT_FALSE(r->current);
  EXPECT_EQ(r->superseded_by, "lra-v1.3");
  EXPECT_EQ(release_trial_seeds("listops", r->sha256), (std::vector<int64_t>{0, 1, 2}));
  r = find_release("listops", sha256_hex(std::string(find_official("listops")->text)));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->version, "lra-v1.3");
  EXPECT_TRUE(r->current);
  // The image manifests before lra-v1.2 did not mask zero pixels: the note says so.
  r = find_release("image", "7cfd4cc6be30294d65a137c321f93d2cac5f80ba433f8dbbc8777dcf2feaddcc");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->version, "lra-v1.1");
  EXPECT_NE(r->note.find("quirk Q1"), std::string::npos) << r->note;
  EXPECT_FALSE(find_release("image", sha256_hex("something else")).has_value());
  EXPECT_FALSE(find_release("pathfinder", r->sha256).has_value());  // hashes are per task
}

// The registry check itself: an edited file, a wrong hash, a duplicate or a
// missing file is a broken build, reported with the offending entry.
TEST(Releases, ABrokenRegistryIsRefusedNamingTheEntry) {
  const std::string text = registry_text();
  ASSERT_FALSE(text.empty());
  EXPECT_NO_THROW(parse_releases(text, "releases.toml", true));
  auto expect_broken = [](const std::string& t, const std::string& needle) {
    try {
      parse_releases(t, "releases.toml", true);
      ADD_FAILURE() << "accepted a registry that should fail with: " << needle;
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::internal);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  std::string edited = text;
  const std::string pin = "a06563611e35894cdb1bb2c08fc7614672126c52912a3eaeb43b11c900999e86";
  edited.replace(edited.find(pin), pin.size(), std::string(64, 'a'));
  expect_broken(edited, "a released manifest was edited");
  std::string missing = text;
  missing.replace(missing.find("released/lra-v1.0/text.toml"), 27, "released/lra-v1.0/nope.toml");
  expect_broken(missing, "'released/lra-v1.0/nope.toml' is not among the embedded manifests");
  expect_broken(text + "\n[[release]]\nversion = \"lra-v1.0\"\nprotocol = \"lra-v1\"\n", "listed twice");
  expect_broken("schema = \"lrahost.releases/v1\"\n", "no [[release]] entries");
}
