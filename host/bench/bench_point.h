// bench/bench_point.h — one measured configuration of `lrahost bench` (the
// LRA paper's Table 2 protocol: the Text backbone, full training steps), the
// unit the measurement produces and the reports (JSON, Markdown, SVG) read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lra::host::bench {

struct BenchPoint {
  std::string plugin;
  int64_t length = 0;          // tokens per example
  int64_t batch = 0;           // examples per step
  std::string device;          // e.g. "cuda:0 (NVIDIA H100 80GB HBM3)" or "cpu (2 threads)"
  std::string dtype;           // "float32" or "bfloat16 autocast"
  std::string status = "ok";   // "ok" | "oom" (out of memory: a result, not a crash) | "error"
  std::string error;           // the message for oom / error
  double steps_per_s = 0;      // median over the timed repetitions
  std::vector<double> repetition_steps_per_s;
  double tokens_per_s = 0;     // steps_per_s * batch * length
  int64_t peak_memory_bytes = 0;
  std::string peak_memory_kind;  // "cuda allocator peak" | "process peak RSS"
  int64_t params = 0;
  std::optional<double> flops_per_step;  // known for transformer only (matmul FLOPs, fwd + bwd)
  std::optional<double> mfu;             // flops_per_step * steps_per_s / device peak, when both known
  // The machine while the point was measured: its 1-minute load average at the
  // end of the timed repetitions and its cores; load < 0 = unknown (bench.json
  // files written before the field).
  double load_average = -1;
  int64_t cores = 0;
  // On CUDA: how the training steps ran (train/step_graph.h GraphPlan::words:
  // "captured", or "off: ..."); empty on the CPU and in older files.
  std::string cuda_graphs;
};

// How far the timed repetitions of a point disagree: their min and max steps/s
// and (max - min) / median; all zero for fewer than two repetitions.
struct Spread {
  double min = 0, max = 0, fraction = 0;
};
Spread spread_of(const BenchPoint& p);

// A speed whose repetitions spread by more than this is flagged, in bench.md and on the console.
inline constexpr double kSpreadWarning = 0.10;

// Why an ok point's speed should not be read as is: its repetitions spread by
// more than kSpreadWarning, or the machine's load average was above its
// cores. "" when neither, or for a failed point.
std::string speed_warning(const BenchPoint& p);

}  // namespace lra::host::bench
