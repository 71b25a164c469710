// Issue 43: a compiled mixer's source in a bundle, built by the verifier.
// `lrahost submit --source DIR` packs the source folder of the compiled
// mixer beside its .so (text only); an installed `lrahost verify
// --reevaluate` builds it in the sandbox against its own SDK and runs what
// it built, not the submitted binary. The source here is the SDK's example
// mixer with one line added that prints from the built plugin, so the log
// shows whose code ran. One compile of a LibTorch source (about a minute).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool sandbox_works() { return std::system("bwrap --ro-bind / / --unshare-all true >/dev/null 2>&1") == 0; }

const char* kFewSteps = " --set train.steps=4 --set train.eval_every=4 --set train.warmup=2 --set train.steps_per_cycle=4"
                        " --set data.test_size=100";
const char* kMarker = "gated_conv: this is the plugin built from the bundled source";

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::string replaced(std::string text, const std::string& what, const std::string& with) {
  const size_t at = text.find(what);
  if (at == std::string::npos) throw std::runtime_error("not in the example: " + what);
  return text.replace(at, what.size(), with);
}

class SourceBuildCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox_works()) GTEST_SKIP() << "bubblewrap cannot create a sandbox here (apt-get install bubblewrap)";
    // The installed lrahost and its SDK lie in here; the sandbox's user nobody must reach them,
    // as it reaches any lrahost installed where users can run it.
    fs::permissions(d_.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                   fs::perms::others_read | fs::perms::others_exec);
    // A run of the in-tree build of the SDK's example (named gated_conv).
    const auto o = lrahost("run --plugin " + fixture_plugin("fixture_gated_conv") +
                           " --task listops --preset smoke --threads 2 --seed 0 --data-dir " + data().string() +
                           " --out " + (d_.path() / "runs" / "conv").string() + kFewSteps);
    ASSERT_EQ(o.code, 0) << o.output;
    // Its source, as a submitter keeps it: the example's files, a build tree and a .git folder.
    const fs::path example = fs::path(LRA_SOURCE_DIR) / "sdk" / "examples" / "gated_conv";
    fs::create_directories(src() / "build");
    fs::create_directories(src() / ".git");
    fs::copy_file(example / "CMakeLists.txt", src() / "CMakeLists.txt");
    fs::copy_file(example / "README.md", src() / "README.md");
    write_text(src() / "gated_conv.cpp",
               replaced("#include <cstdio>\n" + read_text(example / "gated_conv.cpp"),
                        "std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& opt) {",
                        "std::shared_ptr<lra::Mixer> create(const lra::MixerSpec& spec, const lra::ParamReader& opt) {\n"
                        "  std::fprintf(stderr, \"" + std::string(kMarker) + "\\n\");"));
    write_text(src() / "build" / "CMakeCache.txt", "# a build tree\n");
    write_text(src() / ".git" / "HEAD", "ref: refs/heads/main\n");
  }
  fs::path data() const { return d_.path() / "data"; }
  fs::path src() const { return d_.path() / "src"; }
  fs::path submit(const std::string& extra) {
    const fs::path bundle = d_.path() / "sub.tar";
    fs::remove(bundle);
    auto s = lrahost("submit " + (d_.path() / "runs").string() + " --out " + bundle.string() + " " + extra);
    EXPECT_EQ(s.code, 0) << s.output;
    return bundle;
  }
  // lrahost installed into a prefix of its own, with its SDK: what a maintainer runs.
  fs::path installed() {
    const fs::path prefix = d_.path() / "prefix";
    if (!fs::exists(prefix / "bin" / "lrahost")) {
      const std::string cmd = std::string(LRA_CMAKE_COMMAND) + " --install '" + LRA_BUILD_DIR + "' --prefix '" +
                              prefix.string() + "' >/dev/null 2>&1";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
    return prefix / "bin" / "lrahost";
  }
  Outcome reevaluate(const fs::path& lrahost_bin, const fs::path& bundle, const fs::path& checked) {
    Outcome o;
    const std::string cmd = lrahost_bin.string() + " verify --reevaluate " + bundle.string() + " --out " +
                            checked.string() + " --threads 2 --data-dir " + data().string() + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.output.append(buf, n);
    const int status = pclose(p);
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return o;
  }
  static json report(const fs::path& checked) {
    return json::parse(read_text(checked / "runs" / "listops-seed-0" / "reevaluation.json"));
  }
  TempDir d_;
};

// The honest direction: the source travels without its build tree, the
// verifier builds it and the plugin it built is the one that runs (its line
// is in the mixer's log); the result re-evaluates valid within the tolerance
// a rebuilt plugin gets, and the report names the build.
TEST_F(SourceBuildCli, TheVerifierBuildsTheBundledSourceAndRunsWhatItBuilt) {
  const fs::path bundle = submit("--source " + src().string());
  const fs::path checked = d_.path() / "checked";
  const auto v = reevaluate(installed(), bundle, checked);
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_TRUE(has(v.output, "compiled mixer built from its bundled source (3 files) in the sandbox")) << v.output;
  EXPECT_TRUE(has(v.output, "ran, not the submitted one")) << v.output;
  const json r = report(checked);
  EXPECT_TRUE(r["valid"].get<bool>()) << r.dump(2);
  EXPECT_EQ(r["code"]["kind"], "built from source") << r.dump(2);
  EXPECT_EQ(r["code"]["source_files"], 3);
  EXPECT_EQ(r["code"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_TRUE(has(r["code"]["recipe"].get<std::string>(), "-DCMAKE_BUILD_TYPE=Release")) << r.dump(2);
  EXPECT_EQ(r["test"]["same_build"], r["code"]["sha256"] == r["plugin_sha256"]);
  const std::string log = read_text(checked / "logs" / "listops-seed-0-mixer.log");
  EXPECT_TRUE(has(log, kMarker)) << log;
  EXPECT_TRUE(fs::exists(checked / "logs" / "listops-seed-0-build.log"));
  EXPECT_FALSE(fs::exists(checked / "sources" / r["plugin_sha256"].get<std::string>() / "build"));
}

// The other direction: a source that does not build is refused in the
// verifier's words (the compiler's output about the judged code stays in the
// local log), and a verifier that is no installed lrahost says how to get one.
TEST_F(SourceBuildCli, AdversarialASourceThatDoesNotBuildIsRefusedAndItsTextIsNotPublished) {
  write_text(src() / "gated_conv.cpp", "#error the judged code speaks here\n" + read_text(src() / "gated_conv.cpp"));
  const fs::path bundle = submit("--source gated_conv=" + src().string());
  const fs::path checked = d_.path() / "checked";
  const auto v = reevaluate(installed(), bundle, checked);
  EXPECT_EQ(v.code, 4) << v.output;
  EXPECT_TRUE(has(v.output, "its bundled source did not build with the installed SDK")) << v.output;
  EXPECT_FALSE(has(v.output, "the judged code speaks here")) << v.output;
  EXPECT_FALSE(has(read_text(checked / "runs" / "listops-seed-0" / "reevaluation.json"), "the judged code speaks"));
  EXPECT_TRUE(has(read_text(checked / "logs" / "listops-seed-0-build.log"), "the judged code speaks here"));

  const auto tree = reevaluate(LRAHOST_BIN, bundle, d_.path() / "tree");
  EXPECT_EQ(tree.code, 4) << tree.output;
  EXPECT_TRUE(has(tree.output, "this lrahost is not an installed one")) << tree.output;
  EXPECT_TRUE(has(tree.output, "pass --sdk PREFIX")) << tree.output;
}

// submit: --source names a compiled mixer of the bundle, a folder with its
// CMakeLists.txt; each mistake is exit 2 naming it, and no bundle is written.
TEST_F(SourceBuildCli, SubmitRefusesASourceItCannotTieToAMixer) {
  const fs::path bundle = d_.path() / "bad.tar";
  auto expect_refused = [&](const std::string& args, const std::string& why) {
    const auto o = lrahost("submit " + (d_.path() / "runs").string() + " --out " + bundle.string() + " " + args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.output;
    EXPECT_TRUE(has(o.output, why)) << args << "\n" << o.output;
    EXPECT_FALSE(fs::exists(bundle)) << args;
  };
  expect_refused("--source other=" + src().string(), "no run of the bundle uses a compiled mixer named 'other'");
  expect_refused("--source " + (d_.path() / "runs").string(), "no CMakeLists.txt at its top");
  expect_refused("--source " + src().string() + " --source gated_conv=" + src().string(), "was given twice");
  const auto ok = lrahost("submit " + (d_.path() / "runs").string() + " --out " + bundle.string() + " --source " +
                          src().string());
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_TRUE(has(ok.output, "source of gated_conv: 3 files")) << ok.output;
  EXPECT_TRUE(has(ok.output, "left out, not source: ")) << ok.output;
}

}  // namespace
}  // namespace lra::test
