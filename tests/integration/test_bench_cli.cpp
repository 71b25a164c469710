// `lrahost bench` end to end on CPU: measurement, reports, merging, per-
// configuration peak memory, and bad options failing before any measurement.
#include <cmath>
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
    EXPECT_FALSE(r.contains("cuda_graphs")) << "the CPU has no CUDA graphs to report";
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

// Issue 48: a plugin's peak memory does not depend on what ran before it.
// A Python mixer (an embedded interpreter and its heap) and the transformer,
// in both orders: each plugin is measured in a process of its own, so the
// transformer's peak is the same either way (within 5%, allocator noise).
TEST(BenchCli, PeakMemoryDoesNotDependOnWhatRanBefore) {
  TempDir d;
  const std::string python = std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/retention.py:Retention";
  auto peak_of_transformer = [&](const std::string& plugins, const std::string& out) -> int64_t {
    auto o = lrahost("bench --plugins " + plugins + " --lengths 64 --batch 4 --warmup 1 --steps 1 --repeats 2 "
                     "--device cpu --out " + (d.path() / out).string());
    EXPECT_EQ(o.code, 0) << o.output;
    EXPECT_NE(o.output.find("in a process of its own"), std::string::npos) << o.output;
    const auto r = nlohmann::json::parse(read_text(d.path() / out / "bench.json"))["results"];
    EXPECT_EQ(r.size(), 2u);
    for (const auto& p : r)
      if (p["plugin"] == "transformer") return p["peak_memory_bytes"].get<int64_t>();
    ADD_FAILURE() << "no transformer row";
    return 0;
  };
  const int64_t first = peak_of_transformer("transformer," + python, "first");
  const int64_t after = peak_of_transformer(python + ",transformer", "after");
  ASSERT_GT(first, 0);
  EXPECT_LT(std::abs(static_cast<double>(after - first)), 0.05 * static_cast<double>(first))
      << "transformer's peak: " << first << " bytes measured first, " << after << " after the Python mixer";
  EXPECT_FALSE(fs::exists(d.path() / "first" / "0")) << "the children's scratch folders are not left in --out";
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
  // CUDA graphs asked for where there is no CUDA (train/step_graph.h).
  auto graphs = lrahost("bench --plugins transformer --lengths 16 --device cpu --cuda-graphs on" + out);
  EXPECT_EQ(graphs.code, 2) << graphs.output;
  EXPECT_NE(graphs.output.find("--cuda-graphs on: CUDA graphs need a CUDA device"), std::string::npos) << graphs.output;
  EXPECT_FALSE(fs::exists(d.path() / "b" / "bench.json"));
}

TEST(BenchCli, TaskModePredictsTheWholeRun) {
  TempDir d;
  const fs::path out = d.path() / "listops";
  auto o = lrahost("bench --task listops --preset smoke --micro-batch 8 --warmup 0 --steps 2 --repeats 1 --device cpu "
                   "--out " + out.string());
  ASSERT_EQ(o.code, 0) << o.output;
  const auto j = nlohmann::json::parse(read_text(out / "bench.json"));
  EXPECT_EQ(j["schema"], "lrahost.bench-runs/v1");
  ASSERT_EQ(j["runs"].size(), 1u);
  const auto& r = j["runs"][0];
  EXPECT_EQ(r["plugin"], "transformer");  // the default with --task
  EXPECT_EQ(r["manifest"], "smoke/listops");
  EXPECT_EQ(r["status"], "ok");
  EXPECT_EQ(r["training"]["batch"], 32);   // the manifest's batch and length
  EXPECT_EQ(r["training"]["length"], 64);
  EXPECT_EQ(r["micro_batch"], 8);
  EXPECT_EQ(r["eval_batch"], 100);
  EXPECT_GT(r["eval_batches_per_s"].get<double>(), 0.0);
  EXPECT_EQ(r["schedule"]["validations"], 8);       // 2000 steps, every 250
  EXPECT_EQ(r["schedule"]["val_batches_each"], 5);  // 500 / 100
  EXPECT_EQ(r["schedule"]["test_batches"], 10);     // 1000 / 100
  const double steps_per_s = r["training"]["steps_per_s"].get<double>();
  EXPECT_NEAR(r["predicted_s"]["training"].get<double>(), 2000 / steps_per_s, 1e-6);
  EXPECT_NEAR(r["predicted_s"]["evaluation"].get<double>(), 50 / r["eval_batches_per_s"].get<double>(), 1e-6);
  EXPECT_EQ(r["seeds"], 1);
  EXPECT_NE(read_text(out / "bench.md").find("| transformer | listops | 64 | 32 (micro 8) |"), std::string::npos)
      << read_text(out / "bench.md");
  EXPECT_FALSE(fs::exists(out / "bench.svg"));
}

TEST(BenchCli, TaskModeSuiteCoversEveryTaskWithPathXApart) {
  TempDir d;
  const fs::path out = d.path() / "suite";
  auto o = lrahost("bench --task suite --preset smoke --plugins linear_transformer --warmup 0 --steps 1 --repeats 1 "
                   "--device cpu --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.output;
  const auto j = nlohmann::json::parse(read_text(out / "bench.json"));
  ASSERT_EQ(j["runs"].size(), 6u);
  const std::vector<std::string> tasks = {"listops", "text", "retrieval", "image", "pathfinder", "pathx"};
  double lra_tasks = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(j["runs"][i]["task"], tasks[i]);
    EXPECT_EQ(j["runs"][i]["status"], "ok") << j["runs"][i].dump();
    if (tasks[i] != "pathx") lra_tasks += j["runs"][i]["predicted_s"]["all_seeds"].get<double>();
  }
  ASSERT_EQ(j["suite"].size(), 1u);
  EXPECT_NEAR(j["suite"][0]["lra_tasks_s"].get<double>(), lra_tasks, 1e-6 * lra_tasks);
  EXPECT_NEAR(j["suite"][0]["pathx_s"].get<double>(), j["runs"][5]["predicted_s"]["all_seeds"].get<double>(), 1e-9);
  EXPECT_NE(read_text(out / "bench.md").find("for Path-X"), std::string::npos);
}

TEST(BenchCli, TaskModeBadOptionsFailBeforeMeasuring) {
  TempDir d;
  const std::string out = " --out " + (d.path() / "b").string();
  auto lengths = lrahost("bench --task listops --lengths 16" + out);
  EXPECT_EQ(lengths.code, 2) << lengths.output;
  auto batch = lrahost("bench --task listops --batch 4" + out);
  EXPECT_EQ(batch.code, 2) << batch.output;
  auto task = lrahost("bench --task no_such_task" + out);
  EXPECT_EQ(task.code, 2) << task.output;
  EXPECT_NE(task.output.find("pathfinder"), std::string::npos) << task.output;
  auto preset = lrahost("bench --task listops --preset no_such_preset" + out);
  EXPECT_EQ(preset.code, 2) << preset.output;
  EXPECT_NE(preset.output.find("no_such_preset"), std::string::npos) << preset.output;
  auto micro = lrahost("bench --micro-batch 4 --plugins transformer --lengths 16" + out);
  EXPECT_EQ(micro.code, 2) << micro.output;
  auto negative = lrahost("bench --task listops --preset smoke --micro-batch -1" + out);
  EXPECT_EQ(negative.code, 2) << negative.output;
  auto plugin = lrahost("bench --task listops --preset smoke --plugins no_such_mixer" + out);
  EXPECT_EQ(plugin.code, 3) << plugin.output;
  auto graphs = lrahost("bench --task listops --preset smoke --device cpu --cuda-graphs on" + out);
  EXPECT_EQ(graphs.code, 2) << graphs.output;
  EXPECT_NE(graphs.output.find("CUDA graphs need a CUDA device"), std::string::npos) << graphs.output;
  auto bad = lrahost("bench --task listops --preset smoke --cuda-graphs maybe" + out);
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_FALSE(fs::exists(d.path() / "b" / "bench.json"));
}

}  // namespace
}  // namespace lra::test
