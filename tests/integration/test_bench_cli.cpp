// `lrahost bench` end to end on CPU: measurement, reports, merging, per-
// configuration peak memory, and bad options failing before any measurement.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace lra::test {
namespace {

namespace fs = std::filesystem;

TEST(BenchCli, MeasuresWritesReportsAndMerges) {
  TempDir d;
  const std::string one = (d.path() / "one").string(), two = (d.path() / "two").string();
  auto a = lrahost("bench --plugins transformer,linear_transformer --lengths 16,32 --batch 2 --warmup 1 --steps 2 "
                   "--repeats 2 --device cpu --out " + one);
  ASSERT_EQ(a.code, 0) << a.output;
  const auto j = nlohmann::json::parse(read_text(d.path() / "one" / "bench.json"));
  EXPECT_EQ(j["schema"], "lrahost.bench/v1");
  ASSERT_EQ(j["results"].size(), 4u);
  for (const auto& r : j["results"]) {
    EXPECT_EQ(r["status"], "ok");
    EXPECT_GT(r["steps_per_s"].get<double>(), 0.0);
    EXPECT_EQ(r["repetition_steps_per_s"].size(), 2u);
    EXPECT_GT(r["peak_memory_bytes"].get<int64_t>(), 0);
    EXPECT_EQ(r["peak_memory_kind"], "process peak RSS");
  }
  EXPECT_TRUE(j["results"][0]["flops_per_step"].is_number());  // transformer: known
  EXPECT_TRUE(j["results"][2]["flops_per_step"].is_null());    // others: not guessed
  EXPECT_NE(read_text(d.path() / "one" / "bench.md").find("linear_transformer"), std::string::npos);
  EXPECT_NE(read_text(d.path() / "one" / "bench.svg").find("</svg>"), std::string::npos);

  auto merged = lrahost("bench --report " + one + "/bench.json " + one + "/bench.json --out " + two);
  ASSERT_EQ(merged.code, 0) << merged.output;
  EXPECT_EQ(nlohmann::json::parse(read_text(d.path() / "two" / "bench.json"))["results"].size(), 8u);
}

TEST(BenchCli, PeakMemoryIsPerConfigurationOnCpu) {
  // A large configuration first, then a small one: the small one's peak must
  // not inherit the large one's (the allocator's cached memory is released).
  TempDir d;
  auto o = lrahost("bench --plugins transformer --lengths 1024,16 --batch 8 --warmup 0 --steps 1 --repeats 1 "
                   "--device cpu --out " + (d.path() / "b").string());
  ASSERT_EQ(o.code, 0) << o.output;
  const auto r = nlohmann::json::parse(read_text(d.path() / "b" / "bench.json"))["results"];
  const auto large = r[0]["peak_memory_bytes"].get<int64_t>(), small = r[1]["peak_memory_bytes"].get<int64_t>();
  EXPECT_LT(small + (200 << 20), large) << "large " << large << " small " << small;
}

TEST(BenchCli, BadOptionsFailBeforeMeasuring) {
  TempDir d;
  const std::string out = " --out " + (d.path() / "b").string();
  auto lengths = lrahost("bench --plugins transformer --lengths 16,x" + out);
  EXPECT_EQ(lengths.code, 2) << lengths.output;
  EXPECT_NE(lengths.output.find("'x'"), std::string::npos) << lengths.output;
  auto plugin = lrahost("bench --plugins transformer,no_such_mixer --lengths 16" + out);
  EXPECT_EQ(plugin.code, 3) << plugin.output;
  EXPECT_NE(plugin.output.find("no_such_mixer"), std::string::npos) << plugin.output;
  auto report = lrahost("bench --report " + (d.path() / "missing.json").string() + out);
  EXPECT_EQ(report.code, 2) << report.output;
  EXPECT_FALSE(fs::exists(d.path() / "b" / "bench.json"));
}

}  // namespace
}  // namespace lra::test
