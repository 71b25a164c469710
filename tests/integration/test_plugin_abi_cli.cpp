// The ABI promise of docs/abi.md with real plugin files built by the SDK's own
// macros: a plugin from an older minor of this major loads and trains; one
// from the next major is rejected before any of its code runs, with both
// versions and what to do. (test_plugins_cli.cpp covers a hand-written
// descriptor claiming ABI 2 and the other build facts.)
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "lra/abi.h"
#include "tiny_run.h"

using lra::test::fixture_plugin;
using lra::test::lrahost;
using lra::test::TempDir;

namespace {

std::string version(int major, int minor) { return std::to_string(major) + "." + std::to_string(minor); }

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST(PluginAbi, OlderMinorLoadsAndTrains) {
  if (LRA_ABI_MINOR == 0) GTEST_SKIP() << "no older minor exists for ABI " << LRA_ABI_MAJOR << ".0";
  const std::string plugin = fixture_plugin("fixture_abi_old_minor");
  auto i = lrahost("inspect " + plugin);
  EXPECT_EQ(i.code, 0) << i.output;
  EXPECT_TRUE(contains(i.output, "SDK ABI       " + version(LRA_ABI_MAJOR, 0) + " (host " +
                                     version(LRA_ABI_MAJOR, LRA_ABI_MINOR) + ")"))
      << i.output;
  EXPECT_TRUE(contains(i.output, "status        compatible")) << i.output;

  TempDir dir;
  std::string args = lra::test::tiny_run_args(dir.str() + "/data", dir.str() + "/run");
  const std::string builtin = "--plugin transformer";
  args.replace(args.find(builtin), builtin.size(), "--plugin " + plugin);
  auto r = lrahost(args);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto result = nlohmann::json::parse(lra::test::read_text(dir.path() / "run/result.json"));
  EXPECT_EQ(result["plugin"]["name"], "fixture_abi_old_minor");
  EXPECT_EQ(result["plugin"]["sdk_abi"], std::to_string(LRA_ABI_MAJOR) + ".0");  // what the plugin was built for
  EXPECT_EQ(result["host"]["sdk_abi"], std::to_string(LRA_ABI_MAJOR) + "." + std::to_string(LRA_ABI_MINOR));
}

// The fixture's static constructor aborts: exit 3 (not 134) proves that the
// host rejected it from the file alone.
TEST(PluginAbi, NextMajorIsRejectedNamingBothVersions) {
  const std::string plugin = fixture_plugin("fixture_abi_next_major");
  const std::string expected = "plugin built for SDK ABI " + version(LRA_ABI_MAJOR + 1, LRA_ABI_MINOR) +
                               ", host implements ABI " + version(LRA_ABI_MAJOR, LRA_ABI_MINOR) +
                               " (major versions must be equal): rebuild the plugin against this host's SDK";
  TempDir dir;
  std::string args = lra::test::tiny_run_args(dir.str() + "/data", dir.str() + "/run");
  const std::string builtin = "--plugin transformer";
  args.replace(args.find(builtin), builtin.size(), "--plugin " + plugin);
  auto r = lrahost(args);
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_TRUE(contains(r.output, expected)) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "run"));

  auto i = lrahost("inspect " + plugin);
  EXPECT_EQ(i.code, 3) << i.output;
  EXPECT_TRUE(contains(i.output, "REJECTED")) << i.output;
  EXPECT_TRUE(contains(i.output, expected)) << i.output;
}

// Discovery reads both descriptors without loading either and says which one is usable.
TEST(PluginAbi, PluginsListingMarksOnlyTheNextMajorRejected) {
  TempDir dir;
  std::filesystem::copy_file(fixture_plugin("fixture_abi_old_minor"), dir.path() / "old_minor.so");
  std::filesystem::copy_file(fixture_plugin("fixture_abi_next_major"), dir.path() / "next_major.so");
  auto o = lrahost("plugins", "LRA_PLUGIN_PATH=" + dir.str());
  EXPECT_EQ(o.code, 0) << o.output;
  const auto old_line = o.output.find("fixture_abi_old_minor");
  const auto next_line = o.output.find("fixture_abi_next_major");
  ASSERT_NE(old_line, std::string::npos) << o.output;
  ASSERT_NE(next_line, std::string::npos) << o.output;
  const auto line = [&](size_t at) { return o.output.substr(at, o.output.find('\n', at) - at); };
  EXPECT_TRUE(contains(line(old_line), " ok ")) << line(old_line);
  EXPECT_TRUE(contains(line(next_line), "REJECTED")) << line(next_line);
  EXPECT_TRUE(contains(o.output, "plugin built for SDK ABI " + version(LRA_ABI_MAJOR + 1, LRA_ABI_MINOR)))
      << o.output;
}
