// Plugin discovery, inspection and every way a plugin is rejected (exit 3).
#include <gtest/gtest.h>

#include <regex>

#include "cli_harness.h"
#include "lra/abi.h"

using lra::test::fixture_plugin;
using lra::test::lrahost;
using lra::test::TempDir;

TEST(PluginsCli, ListsBuiltInPlugins) {
  auto o = lrahost("plugins");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("mixer  transformer"), std::string::npos) << o.output;
  // The state-space mixers (issue 20): causal and exact padding, nothing else.
  EXPECT_TRUE(std::regex_search(o.output, std::regex(R"(mixer  s4d +1\.0\.0 +ok .*lra_mixer_s4d\.so  \[causal,padding_mask\])")))
      << o.output;
  EXPECT_TRUE(
      std::regex_search(o.output, std::regex(R"(mixer  mamba2 +1\.0\.0 +ok .*lra_mixer_mamba2\.so  \[causal,padding_mask\])")))
      << o.output;
  EXPECT_NE(o.output.find("task   listops"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("fixture_"), std::string::npos) << "fixtures must not be discovered:\n" << o.output;
}

TEST(PluginsCli, InspectShowsDescriptorAndBuildFacts) {
  auto o = lrahost("inspect transformer");
  EXPECT_EQ(o.code, 0) << o.output;
  const std::string abi = "SDK ABI       " + std::to_string(LRA_ABI_MAJOR) + "." + std::to_string(LRA_ABI_MINOR);
  for (const std::string& want : {std::string("transformer 1.0.0 (mixer plugin)"), abi, std::string("LibTorch"),
                                  std::string("_GLIBCXX_USE_CXX11_ABI"), std::string("status        compatible"),
                                  std::string("causal"), std::string("sha256")})
    EXPECT_NE(o.output.find(want), std::string::npos) << want << "\n" << o.output;
}

TEST(PluginsCli, InspectTaskListsDataOptions) {
  auto o = lrahost("inspect listops");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("train_size"), std::string::npos) << o.output;
}

TEST(PluginsCli, MissingPluginFileExits3WithoutOutput) {
  TempDir out;
  auto o = lrahost("run --plugin /nonexistent/mixer.so --task listops --preset smoke --out " + out.str() + "/run");
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("/nonexistent/mixer.so' does not exist"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(out.path() / "run"));
}

TEST(PluginsCli, UnknownPluginNameListsAvailable) {
  auto o = lrahost("run --plugin no_such_mixer --task listops --preset smoke");
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("available: "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("transformer"), std::string::npos) << o.output;
}

TEST(PluginsCli, PlainSharedLibraryIsNotAPlugin) {
  TempDir out;
  auto o = lrahost("run --plugin " + fixture_plugin("fixture_not_a_plugin") + " --task listops --preset smoke --out " +
                   out.str() + "/run");
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("not an lrahost plugin"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(out.path() / "run"));
}

TEST(PluginsCli, TextFileIsNotAPlugin) {
  TempDir dir;
  lra::test::write_text(dir.path() / "fake.so", "this is not a library\n");
  auto o = lrahost("inspect " + (dir.path() / "fake.so").string());
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("not an ELF file"), std::string::npos) << o.output;
}

// The fixture's static constructor calls abort(): exit code 3 (not 134) also
// proves the host never ran any of its code.
TEST(PluginsCli, OtherAbiMajorRejectedBeforeLoading) {
  auto o = lrahost("run --plugin " + fixture_plugin("fixture_abi2") + " --task listops --preset smoke");
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("plugin built for SDK ABI 2.0, host implements ABI " + std::to_string(LRA_ABI_MAJOR) + "." +
                          std::to_string(LRA_ABI_MINOR)),
            std::string::npos)
      << o.output;
  auto i = lrahost("inspect " + fixture_plugin("fixture_abi2"));
  EXPECT_EQ(i.code, 3) << i.output;
  EXPECT_NE(i.output.find("REJECTED"), std::string::npos) << i.output;
}

TEST(PluginsCli, OtherLibTorchRejectedBeforeLoading) {
  auto o = lrahost("run --plugin " + fixture_plugin("fixture_other_torch") + " --task listops --preset smoke");
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("plugin built against LibTorch 2.11.0, host runs "), std::string::npos) << o.output;
}

TEST(PluginsCli, TaskPluginIsNotAMixer) {
  auto o = lrahost("run --plugin listops --task listops --preset smoke");
  EXPECT_EQ(o.code, 3) << o.output;
}
