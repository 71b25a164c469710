// Issue 28: a Python mixer's sources in a submission bundle
// (reevaluation/bundle_python.h). An honest folder — named by the result's
// plugin.sha256, holding exactly the files plugin.source.files records — is
// extracted; an edited source, an unrecorded or missing file, another folder
// name and every name that could escape the folder are refused naming the
// entry, and a refused bundle leaves nothing behind.
#include <unistd.h>

#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "../support/raw_tar.h"
#include "common/python_source_files.h"
#include "common/python_sources.h"
#include "common/sha256.h"
#include "lra/status.h"
#include "reevaluation/bundle.h"
#include "reevaluation/bundle_python.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using lra::test::RawTar;

struct Tmp {
  fs::path path;
  Tmp() {
    std::string t = "/tmp/lra-bundle-python-test-XXXXXX";
    path = mkdtemp(t.data());
  }
  ~Tmp() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}


const std::string kMixer = "import torch\nfrom helpers.scale import SCALE\n\nclass Mixer(torch.nn.Module):\n    pass\n";
const std::string kHelper = "SCALE = 0.5\n";

// A run "r1" of a Python mixer: its result, bundle.json and the entries a
// honest `lrahost submit` writes for it, each field changeable by a test.
struct PythonRun {
  std::map<std::string, std::string> sources = {{"mixer.py", kMixer}, {"helpers/scale.py", kHelper}};
  std::string cls = "Mixer";

  json recorded_files() const {
    json files = json::object();
    for (const auto& [rel, bytes] : sources) files[rel] = sha256_hex(bytes);
    return files;
  }
  std::string sha() const { return python_sources_sha256(recorded_files()); }
  json result() const {
    return {{"plugin",
             {{"name", cls},
              {"file", "/home/someone/mixers/mixer.py:" + cls},
              {"sha256", sha()},
              {"source",
               {{"language", "python"}, {"class", cls}, {"file", "mixer.py"}, {"files", recorded_files()},
                {"python", "3.11.2"}, {"torch", "1.13.0a0"}}}}}};
  }
  // Entry name -> bytes of the bundle (bundle.json aside).
  std::map<std::string, std::string> entries(const std::string& folder_sha = "") const {
    const std::string folder = "plugins/" + (folder_sha.empty() ? sha() : folder_sha);
    std::map<std::string, std::string> out = {{"runs/r1/result.json", result().dump()}, {"runs/r1/model.pt", "m"}};
    for (const auto& [rel, bytes] : sources) out[folder + "/" + rel] = bytes;
    return out;
  }
  static json index(const std::map<std::string, std::string>& entries, const std::string& plugin) {
    json listed = json::object(), sizes = json::object();
    for (const auto& [name, bytes] : entries) {
      listed[name] = sha256_hex(bytes);
      sizes[name] = bytes.size();
    }
    return {{"schema", kBundleSchema}, {"runs", json::array({{{"dir", "r1"}, {"plugin", plugin}}})},
            {"files", listed}, {"sizes", sizes}};
  }
  std::string plugin(const std::string& folder_sha = "") const {
    return "plugins/" + (folder_sha.empty() ? sha() : folder_sha) + "/mixer.py:" + cls;
  }
};

void write_tar(const fs::path& file, const json& index, const std::map<std::string, std::string>& entries) {
  RawTar tar(file);
  tar.add("bundle.json", index.dump());
  for (const auto& [name, bytes] : entries) tar.add(name, bytes);
}

// The refusal's message; also checks it is a data error that left only the bundle.
std::string refusal(const Tmp& t) {
  std::string why;
  try {
    extract_bundle(t.path / "b.tar", t.path / "out");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data) << e.what();
    why = e.what();
  }
  EXPECT_EQ(t.entries(), std::vector<std::string>{"b.tar"}) << why;
  return why;
}

TEST(BundlePython, SafeSourceNamesAreExactlyRelativePyFilesInsideTheFolder) {
  for (const std::string ok : {"mixer.py", "helpers/scale.py", "pkg/__init__.py", "a-b.c_d.py", "a/b/c/d/e/f/g/h.py"})
    EXPECT_TRUE(is_bundle_python_path(ok)) << ok;
  for (const std::string& bad : std::vector<std::string>{
           "", ".py", "/etc/x.py", "../x.py", "a/../x.py", "./x.py", "a/./x.py", ".hidden.py", "a/.h/x.py", "x.so",
        "x.pyc", "a//x.py", "a/", "a b.py", "a\\b.py", "caf\xc3\xa9.py", "a/b/c/d/e/f/g/h/i.py",
        std::string(200, 'a') + ".py", std::string("x\0.py", 5)})
    EXPECT_FALSE(is_bundle_python_path(bad)) << bad;
  // What a run may record is looser (any name inside the folder); never outside it.
  EXPECT_TRUE(is_relative_inside("my model.py"));
  for (const std::string& bad :
       std::vector<std::string>{"", "/x.py", "../x.py", "a/../../x.py", "a//x.py", std::string("a\0b", 3)})
    EXPECT_FALSE(is_relative_inside(bad)) << bad;
}

TEST(BundlePython, ARunNamesItsClassInAFolderNamedBySixtyFourHexDigits) {
  const std::string sha(64, 'a');
  const auto p = parse_bundle_python_plugin("plugins/" + sha + "/mixer.py:Mixer");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->sha256, sha);
  EXPECT_EQ(p->file, "mixer.py");
  EXPECT_EQ(p->cls, "Mixer");
  EXPECT_EQ(p->spec(), "plugins/" + sha + "/mixer.py:Mixer");
  for (const std::string& bad : std::vector<std::string>{
           "plugins/" + sha + ".so", "plugins/" + sha + "/mixer.py", "plugins/" + sha + "/sub/mixer.py:Mixer",
        "plugins/" + sha + "/../mixer.py:Mixer", "plugins/" + std::string(64, 'A') + "/mixer.py:Mixer",
        "plugins/abc/mixer.py:Mixer", "runs/" + sha + "/mixer.py:Mixer", "plugins/" + sha + "/mixer.py:1Mixer",
        "plugins/" + sha + "/mixer.py:Mix-er", "plugins/" + sha + "/mixer.so:Mixer",
        "/plugins/" + sha + "/mixer.py:Mixer"})
    EXPECT_FALSE(parse_bundle_python_plugin(bad)) << bad;
}

TEST(BundlePython, AnHonestFolderIsExtractedWithEverySource) {
  Tmp t;
  const PythonRun run;
  const auto entries = run.entries();
  write_tar(t.path / "b.tar", PythonRun::index(entries, run.plugin()), entries);
  const json back = extract_bundle(t.path / "b.tar", t.path / "out");
  EXPECT_EQ(back["runs"][0]["plugin"], run.plugin());
  EXPECT_EQ(read(t.path / "out" / ("plugins/" + run.sha()) / "mixer.py"), kMixer);
  EXPECT_EQ(read(t.path / "out" / ("plugins/" + run.sha()) / "helpers/scale.py"), kHelper);
}

TEST(BundlePythonAttack, AnEditedSourceIsRefusedNamingIt) {
  Tmp t;
  const PythonRun run;
  auto entries = run.entries();
  // bundle.json lists the edited bytes: only the result can tell.
  entries["plugins/" + run.sha() + "/helpers/scale.py"] = "SCALE = 1e9\n";
  write_tar(t.path / "b.tar", PythonRun::index(entries, run.plugin()), entries);
  const std::string why = refusal(t);
  EXPECT_NE(why.find("'plugins/" + run.sha() + "/helpers/scale.py' has SHA-256 " + sha256_hex("SCALE = 1e9\n") +
                     ", runs/r1/result.json records " + sha256_hex(kHelper)),
            std::string::npos)
      << why;
}

TEST(BundlePythonAttack, AFolderNotNamedByTheRecordedSourcesIsRefused) {
  Tmp t;
  const PythonRun run;
  const std::string other(64, 'b');
  const auto entries = run.entries(other);
  write_tar(t.path / "b.tar", PythonRun::index(entries, run.plugin(other)), entries);
  const std::string why = refusal(t);
  EXPECT_NE(why.find("plugins/" + other + " is not named by the SHA-256 of runs/r1/result.json's "
                     "plugin.source.files (" + run.sha() + ")"),
            std::string::npos)
      << why;
}

TEST(BundlePythonAttack, AnUnrecordedOrAMissingSourceIsRefused) {
  const PythonRun run;
  {
    Tmp t;
    auto entries = run.entries();
    entries["plugins/" + run.sha() + "/sitecustomize.py"] = "import os\n";
    write_tar(t.path / "b.tar", PythonRun::index(entries, run.plugin()), entries);
    const std::string why = refusal(t);
    EXPECT_NE(why.find("'plugins/" + run.sha() + "/sitecustomize.py' is not one of runs/r1/result.json's "
                       "plugin.source.files"),
              std::string::npos)
        << why;
  }
  {
    Tmp t;
    auto entries = run.entries();
    entries.erase("plugins/" + run.sha() + "/helpers/scale.py");
    write_tar(t.path / "b.tar", PythonRun::index(entries, run.plugin()), entries);
    const std::string why = refusal(t);
    EXPECT_NE(why.find("records the Python source 'helpers/scale.py' (plugin.source.files), which plugins/" +
                       run.sha() + " does not hold"),
              std::string::npos)
        << why;
  }
}

TEST(BundlePythonAttack, NamesThatEscapeTheFolderAreRefusedBeforeAnythingIsWritten) {
  const PythonRun run;
  const std::string folder = "plugins/" + run.sha();
  struct Case {
    std::string what;
    std::function<void(const fs::path&)> write;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"listed parent path",
       [&](const fs::path& tar) {
         auto entries = run.entries();
         entries[folder + "/../../evil.py"] = "x";
         write_tar(tar, PythonRun::index(entries, run.plugin()), entries);
       },
       "bundle.json lists '" + folder + "/../../evil.py', which is not a file of a run it lists"},
      {"unlisted parent path in the archive",
       [&](const fs::path& tar) {
         const auto entries = run.entries();
         RawTar raw(tar);
         raw.add("bundle.json", PythonRun::index(entries, run.plugin()).dump());
         raw.add(folder + "/../../evil.py", "x");
       },
       "entry '" + folder + "/../../evil.py' is not a name a bundle may hold"},
      {"absolute path",
       [&](const fs::path& tar) {
         const auto entries = run.entries();
         RawTar raw(tar);
         raw.add("bundle.json", PythonRun::index(entries, run.plugin()).dump());
         raw.add("/" + folder + "/evil.py", "x");
       },
       "is not a name a bundle may hold"},
      {"run's plugin outside its folder",
       [&](const fs::path& tar) {
         const auto entries = run.entries();
         write_tar(tar, PythonRun::index(entries, folder + "/../mixer.py:Mixer"), entries);
       },
       "does not name a run folder and a plugin file a bundle may hold"},
      {"hidden file",
       [&](const fs::path& tar) {
         auto entries = run.entries();
         entries[folder + "/.pth.py"] = "x";
         write_tar(tar, PythonRun::index(entries, run.plugin()), entries);
       },
       "which is not a file of a run it lists"},
      {"not a .py file",
       [&](const fs::path& tar) {
         auto entries = run.entries();
         entries[folder + "/helpers/_native.so"] = "\x7f" "ELF";
         write_tar(tar, PythonRun::index(entries, run.plugin()), entries);
       },
       "which is not a file of a run it lists"},
      {"symlink",
       [&](const fs::path& tar) {
         const auto entries = run.entries();
         RawTar raw(tar);
         raw.add("bundle.json", PythonRun::index(entries, run.plugin()).dump());
         raw.add(folder + "/mixer.py", "", AE_IFLNK, "/etc/passwd");
       },
       "not a regular file"},
      {"a file that is also a folder",
       [&](const fs::path& tar) {
         auto entries = run.entries();
         entries[folder + "/mixer.py/inner.py"] = "x";
         write_tar(tar, PythonRun::index(entries, run.plugin()), entries);
       },
       "lists '" + folder + "/mixer.py' as a file and as the folder of '" + folder + "/mixer.py/inner.py'"},
      {"oversized source",
       [&](const fs::path& tar) {
         auto entries = run.entries();
         json index = PythonRun::index(entries, run.plugin());
         index["sizes"][folder + "/mixer.py"] = kMaxPythonSourceBytes + 1;
         write_tar(tar, index, {});
       },
       "over the limit of " + std::to_string(kMaxPythonSourceBytes)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    Tmp t;
    c.write(t.path / "b.tar");
    const std::string why = refusal(t);
    EXPECT_NE(why.find(c.message), std::string::npos) << why;
    EXPECT_FALSE(fs::exists(t.path / "evil.py"));
    EXPECT_FALSE(fs::exists("/tmp/evil.py"));
  }
}

// submit's side: python_pack checks the files where plugin.file says they are.
TEST(BundlePython, SubmitPacksTheRecordedFilesAndRefusesAChangedOneNamingIt) {
  Tmp t;
  PythonRun run;
  json result = run.result();
  const fs::path dir = t.path / "src";
  result["plugin"]["file"] = (dir / "mixer.py").string() + ":Mixer";
  fs::create_directories(dir / "helpers");
  std::ofstream(dir / "mixer.py", std::ios::binary) << kMixer;
  std::ofstream(dir / "helpers/scale.py", std::ios::binary) << kHelper;
  const PythonPack pack = python_pack(result, t.path / "result.json");
  EXPECT_EQ(pack.plugin.spec(), run.plugin());
  ASSERT_EQ(pack.files.size(), 2u);
  EXPECT_EQ(pack.files[0].entry, "plugins/" + run.sha() + "/helpers/scale.py");
  EXPECT_EQ(pack.files[0].sha256, sha256_hex(kHelper));

  std::ofstream(dir / "helpers/scale.py", std::ios::binary) << "SCALE = 2\n";
  try {
    python_pack(result, t.path / "result.json");
    ADD_FAILURE() << "packed a changed source";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find((dir / "helpers/scale.py").string() + " has changed since the run"),
              std::string::npos)
        << e.what();
  }
  fs::remove(dir / "helpers/scale.py");
  try {
    python_pack(result, t.path / "result.json");
    ADD_FAILURE() << "packed without a source";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "helpers/scale.py").string() + " (plugin.source.files) is missing"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lra::host
