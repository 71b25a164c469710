// bench/bench_run.h — `lrahost bench`'s work: the LRA paper's speed/memory
// protocol (Table 2) for any set of mixer plugins and lengths
// (bench/measure_step.h), or earlier bench.json files merged; bench.json,
// bench.md and bench.svg written into --out together, once everything is
// measured (bench/bench_report.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <spdlog/logger.h>

namespace lra::host {

struct BenchArgs {
  std::string plugins;                           // comma-separated names; "" = all (Table 2) or transformer (--task)
  std::string lengths = "1024,2048,3072,4096";
  int64_t batch = 32, warmup = 3, steps = 10, repeats = 3;
  // --task: a task's manifest (a comma-separated list, or "suite": every task of `lrahost suite`)
  // timed as `run` trains it, and its whole run predicted (bench/task_bench.h).
  std::string task, preset = "official";
  std::string protocol = "scratch";  // --task with --protocol spt: both phases of self-pretraining
  std::string reference;  // --task with --reference NAME: the runs `run --reference NAME` would make ("" = none)
  int64_t micro_batch = 0;
  int64_t eval_pass_factor = 1;  // --task: evaluation timed in passes this many times as large as run's
  std::vector<std::string> accuracy;             // result.json files: accuracy for the speed/accuracy chart
  std::vector<std::string> report;               // bench.json files to merge into reports (nothing measured)
  // --decode: generation speed and memory per sequence after contexts of
  // --lengths tokens (bench/decode_bench.h); --tokens timed per context.
  bool decode = false;
  int64_t tokens = 8;
  std::string out = "runs/bench", device = "auto";
  bool fp32 = false;
  std::string cuda_graphs = "auto";  // training steps captured in CUDA graphs, as `run --cuda-graphs` (train/step_graph.h)
  int threads = 0;
};

namespace bench {

struct BenchOutcome {
  std::filesystem::path out;  // the directory holding bench.json, bench.md, bench.svg
  std::string markdown;       // bench.md
};

// The --out directory, refused (usage error) when it already holds `report`
// (bench.json; decode.json for --decode).
std::filesystem::path fresh_bench_out(const std::string& out, const std::string& report = "bench.json");

// --plugins as names: a comma-separated list, or every mixer plugin for "" and
// "all" (less `python`, which only runs a class it is given: FILE.py:CLASS).
std::vector<std::string> bench_plugin_names(const std::string& plugins);

// A comma-separated list of positive integers (--lengths); a usage error naming the bad one.
std::vector<int64_t> parse_lengths(const std::string& list);

// --report: earlier bench.json files (e.g. one per plugin) merged into one
// set of reports; nothing measured.
BenchOutcome merge_bench_reports(const BenchArgs& a);

// Every plugin is resolved and every option checked before anything is measured.
BenchOutcome run_bench(const BenchArgs& a, spdlog::logger& log);

}  // namespace bench
}  // namespace lra::host
