// Issue 43: a compiled mixer's source in a submission bundle
// (reevaluation/bundle_source.h) and the rule for which code a re-evaluation
// runs (reevaluation/judged_code.h). An honest source folder is extracted
// beside the .so it builds; a folder for no run's plugin, one without its
// CMakeLists.txt and names that are not source are refused; submit packs
// source text only (no build tree, no hidden folder, no binary).
#include <unistd.h>

#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "../support/raw_tar.h"
#include "common/sha256.h"
#include "lra/status.h"
#include "reevaluation/bundle.h"
#include "reevaluation/bundle_source.h"
#include "reevaluation/judged_code.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using lra::test::RawTar;

struct Tmp {
  fs::path path;
  Tmp() {
    std::string t = "/tmp/lra-bundle-source-test-XXXXXX";
    path = mkdtemp(t.data());
  }
  ~Tmp() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

const std::string kSo = "\x7f" "ELF compiled mixer";
const std::string kCMake = "cmake_minimum_required(VERSION 3.22)\nproject(m CXX)\nfind_package(LraSdk 1 REQUIRED)\n"
                           "lra_add_plugin(m SOURCES src/m.cpp)\n";
const std::string kCpp = "// the mixer\n";

// Bundle entries of one run "r1" whose plugin is a .so, plus `extra` entries.
void write_bundle(const fs::path& file, const std::map<std::string, std::string>& extra) {
  const std::string sha = sha256_hex(kSo);
  std::map<std::string, std::string> entries = {
      {"runs/r1/result.json", "{}"}, {"runs/r1/model.pt", "m"}, {"plugins/" + sha + ".so", kSo}};
  entries.insert(extra.begin(), extra.end());
  json listed = json::object(), sizes = json::object();
  for (const auto& [name, bytes] : entries) {
    listed[name] = sha256_hex(bytes);
    sizes[name] = bytes.size();
  }
  const json index = {{"schema", kBundleSchema},
                      {"runs", json::array({{{"dir", "r1"}, {"plugin", "plugins/" + sha + ".so"}}})},
                      {"files", listed},
                      {"sizes", sizes}};
  RawTar tar(file);
  tar.add("bundle.json", index.dump());
  for (const auto& [name, bytes] : entries) tar.add(name, bytes);
}

std::string refusal(const Tmp& t) {
  try {
    extract_bundle(t.path / "b.tar", t.path / "out");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data) << e.what();
    EXPECT_FALSE(fs::exists(t.path / "out"));
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(BundleSource, SourceNamesAreTextFilesOfASourceTreeInsideTheFolder) {
  for (const std::string ok : {"CMakeLists.txt", "src/m.cpp", "include/m/a.h", "cmake/x.cmake", "k.cu", "a.hpp",
                               "README.md", "config.h.in", "sub/CMakeLists.txt"})
    EXPECT_TRUE(is_bundle_source_path(ok)) << ok;
  for (const std::string& bad : std::vector<std::string>{"", "m.so", "m.o", "m.a", "blob.bin", "../m.cpp", "/m.cpp",
                                                         ".hidden.cpp", "a/.git/x.h", "my mixer.cpp", "m.py", "m"})
    EXPECT_FALSE(is_bundle_source_path(bad)) << bad;
  const std::string sha(64, 'a');
  EXPECT_TRUE(is_bundle_source_entry("sources/" + sha + "/src/m.cpp"));
  EXPECT_TRUE(is_allowed_bundle_name("sources/" + sha + "/CMakeLists.txt"));
  EXPECT_FALSE(is_bundle_source_entry("sources/" + sha + "/m.so"));
  EXPECT_FALSE(is_bundle_source_entry("sources/" + std::string(64, 'A') + "/m.cpp"));
  EXPECT_FALSE(is_bundle_source_entry("sources/abc/m.cpp"));
  EXPECT_FALSE(is_bundle_source_entry("sources/" + sha));
}

TEST(BundleSource, TheRuleRunsTheCodeAReviewerCanRead) {
  using J = JudgedCode;
  for (bool closed : {false, true}) {
    // A Python mixer is its sources; a bundled source is built and run, whatever else holds.
    EXPECT_EQ(judged_code({true, false, false, closed}), J::python_sources);
    EXPECT_EQ(judged_code({false, true, false, closed}), J::built_from_source);
    EXPECT_EQ(judged_code({false, true, true, closed}), J::built_from_source);
    // A built-in is the verifier's own build: it needs no source in the bundle.
    EXPECT_EQ(judged_code({false, false, true, closed}), J::host_builtin);
  }
  // A compiled mixer without source: an open run runs the binary, a closed one is refused.
  EXPECT_EQ(judged_code({false, false, false, false}), J::submitted_binary);
  EXPECT_EQ(judged_code({false, false, false, true}), J::refused);
  EXPECT_NE(closed_binary_refusal("mine").find("lrahost submit --source"), std::string::npos);
}

TEST(BundleSource, ABuiltInIsRecognisedByItsNameAndFileOnly) {
  auto result = [](const std::string& name, const std::string& file) {
    return json{{"plugin", {{"name", name}, {"file", file}, {"sha256", std::string(64, 'a')}}}};
  };
  EXPECT_EQ(recorded_builtin_mixer(result("transformer", "/opt/lrahost/lib/lrahost/plugins/lra_mixer_transformer.so")),
            "transformer");
  EXPECT_FALSE(recorded_builtin_mixer(result("transformer", "/home/me/libtransformer.so")));
  EXPECT_FALSE(recorded_builtin_mixer(result("transformer", "/x/lra_mixer_s4d.so")));
  EXPECT_FALSE(recorded_builtin_mixer(result("transformer", "lra_mixer_transformer.so")));
  EXPECT_FALSE(recorded_builtin_mixer(result("python", "/x/lra_mixer_python.so")));
  EXPECT_FALSE(recorded_builtin_mixer(result("../x", "/x/lra_mixer_../x.so")));
  json py = result("Mixer", "/x/lra_mixer_Mixer.so");
  py["plugin"]["source"] = {{"language", "python"}};
  EXPECT_FALSE(recorded_builtin_mixer(py));
}

TEST(BundleSource, AnHonestSourceFolderIsExtractedBesideItsPlugin) {
  Tmp t;
  const std::string folder = bundle_source_folder(sha256_hex(kSo));
  write_bundle(t.path / "b.tar", {{folder + "/CMakeLists.txt", kCMake}, {folder + "/src/m.cpp", kCpp}});
  extract_bundle(t.path / "b.tar", t.path / "out");
  EXPECT_EQ(read(t.path / "out" / folder / "CMakeLists.txt"), kCMake);
  EXPECT_EQ(read(t.path / "out" / folder / "src/m.cpp"), kCpp);
}

TEST(BundleSourceAttack, ASourceFolderOfNoRunsPluginIsRefused) {
  Tmp t;
  const std::string other = bundle_source_folder(std::string(64, 'c'));
  write_bundle(t.path / "b.tar", {{other + "/CMakeLists.txt", kCMake}});
  const std::string why = refusal(t);
  EXPECT_NE(why.find("'" + other + "/CMakeLists.txt', which is not a file of a run it lists"), std::string::npos)
      << why;
}

TEST(BundleSourceAttack, ASourceFolderWithoutItsCMakeListsOrWithABinaryIsRefused) {
  const std::string folder = bundle_source_folder(sha256_hex(kSo));
  {
    Tmp t;
    write_bundle(t.path / "b.tar", {{folder + "/src/m.cpp", kCpp}});
    const std::string why = refusal(t);
    EXPECT_NE(why.find("but not '" + folder + "/CMakeLists.txt', which builds it"), std::string::npos) << why;
  }
  {
    Tmp t;
    write_bundle(t.path / "b.tar", {{folder + "/CMakeLists.txt", kCMake}, {folder + "/prebuilt.so", kSo}});
    const std::string why = refusal(t);
    EXPECT_NE(why.find(folder + "/prebuilt.so"), std::string::npos) << why;
  }
}

TEST(BundleSource, SubmitPacksSourceTextOnly) {
  Tmp t;
  const fs::path src = t.path / "mixer";
  write(src / "CMakeLists.txt", kCMake);
  write(src / "src/m.cpp", kCpp);
  write(src / "build/CMakeCache.txt", "# a build tree\n");
  write(src / "build/generated.cpp", "// generated\n");
  write(src / ".git/config", "[core]\n");
  write(src / "notes.bin", std::string("\0\1", 2));
  const std::string sha(64, 'e');
  const SourcePack pack = source_pack(src, sha);
  std::set<std::string> entries;
  for (const auto& f : pack.files) {
    entries.insert(f.entry);
    EXPECT_EQ(f.sha256, sha256_file(f.source));
  }
  EXPECT_EQ(entries, (std::set<std::string>{"sources/" + sha + "/CMakeLists.txt", "sources/" + sha + "/src/m.cpp"}));
  const std::set<std::string> skipped(pack.skipped.begin(), pack.skipped.end());
  EXPECT_EQ(skipped, (std::set<std::string>{"build/", ".git/", "notes.bin"}));
}

TEST(BundleSourceAttack, SubmitRefusesABinaryInASourceNameAFolderWithoutCMakeListsAndOddNames) {
  auto refused = [](const fs::path& dir) -> std::string {
    try {
      source_pack(dir, std::string(64, 'e'));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "accepted " << dir;
    return "";
  };
  Tmp t;
  write(t.path / "a/CMakeLists.txt", kCMake);
  write(t.path / "a/blob.h", std::string("unsigned char so[] = {\0};", 26));
  EXPECT_NE(refused(t.path / "a").find("'blob.h' holds a NUL byte"), std::string::npos);
  write(t.path / "b/m.cpp", kCpp);
  EXPECT_NE(refused(t.path / "b").find("no CMakeLists.txt at its top"), std::string::npos);
  write(t.path / "c/CMakeLists.txt", kCMake);
  write(t.path / "c/my mixer.cpp", kCpp);
  EXPECT_NE(refused(t.path / "c").find("'my mixer.cpp' has a name a bundle cannot carry"), std::string::npos);
}

}  // namespace
}  // namespace lra::host
