// Issue 48: one source for the smoke baselines. The committed result files
// (docs/measured/cpu/baselines/) are compiled into the host and the README's
// smoke numbers are the same files' — checked here, so a re-measured baseline
// or an edited README that disagree fail CI.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "leaderboard/smoke_baselines.h"

using namespace lra::host;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json result_of(const std::string& task, const std::string& plugin) {
  return nlohmann::json::parse(
      read_file(fs::path(LRA_SOURCE_DIR) / "docs/measured/cpu/baselines" / task / plugin / "result.json"));
}

std::string percent(double fraction) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", 100 * fraction);
  return b;
}

}  // namespace

TEST(SmokeBaselines, TheCompiledTableIsTheCommittedFiles) {
  size_t listops = 0;
  for (const auto& b : smoke_baselines()) {
    SCOPED_TRACE(b.file);
    const auto r = nlohmann::json::parse(read_file(fs::path(LRA_SOURCE_DIR) / b.file));
    EXPECT_EQ(r["plugin"]["name"], b.plugin);
    EXPECT_EQ(r["task"]["name"], b.task);
    EXPECT_EQ(r["task"]["preset"], "smoke");
    EXPECT_EQ(r["metrics"]["test_accuracy"].get<double>(), b.test_accuracy);
    EXPECT_EQ(r["metrics"]["majority_class_rate"].get<double>(), b.majority_class_rate);
    listops += b.task == "listops";
  }
  EXPECT_GE(listops, 13u) << "every built-in mixer has a smoke ListOps baseline";
  ASSERT_TRUE(smoke_baseline("transformer", "listops").has_value());
  EXPECT_FALSE(smoke_baseline("transformer", "text").has_value());
}

TEST(SmokeBaselines, TheReadmeQuotesThem) {
  const std::string readme = read_file(fs::path(LRA_SOURCE_DIR) / "README.md");
  const auto listops = result_of("listops", "transformer");
  // The summary scripts/main ends with.
  const auto at = readme.find("transformer on listops (open division)");
  ASSERT_NE(at, std::string::npos);
  const std::string block = readme.substr(at, readme.find("```", at) - at);
  const auto& m = listops["metrics"];
  EXPECT_NE(block.find("test accuracy           " + percent(m["test_accuracy"].get<double>())), std::string::npos)
      << block;
  EXPECT_NE(block.find("majority-class rate     " + percent(m["majority_class_rate"].get<double>())), std::string::npos)
      << block;
  EXPECT_NE(block.find("best validation         " + percent(m["best_val_accuracy"].get<double>()) + "  (step " +
                       std::to_string(m["best_val_step"].get<int64_t>()) + ")"),
            std::string::npos)
      << block;
  EXPECT_EQ(block.find("LRA paper"), std::string::npos) << "a smoke run is not set beside the paper";
  // The task table's rows marked as the baselines.
  for (const std::string task : {"listops", "pathfinder"}) {
    SCOPED_TRACE(task);
    const auto r = result_of(task, "transformer");
    const std::regex row("\\| " + task + " ² \\|[^\\n]*\\| " + percent(r["metrics"]["test_accuracy"].get<double>()) +
                         " \\| " + percent(r["metrics"]["majority_class_rate"].get<double>()) + " \\|");
    EXPECT_TRUE(std::regex_search(readme, row)) << "README's " << task << " row is not the committed baseline's";
  }
}
