// bench/task_bench.h — `lrahost bench --task T --preset P`: a task's manifest
// as `run` would train it (its backbone, batch, length, micro-batching,
// precision and the plugin's reference settings), timed for training steps
// and for evaluation batches, and the wall time of the whole run predicted
// from the manifest's schedule (bench/run_prediction.h) — per task, per seed
// and for the suite (the five LRA tasks x their trial seeds, Path-X apart).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "bench/bench_point.h"
#include "bench/bench_run.h"
#include "bench/run_prediction.h"

namespace lra::host::bench {

struct TaskRunEstimate {
  std::string plugin, task, preset, manifest;  // manifest: its name, e.g. "lra-v1/listops"
  std::string release;                         // e.g. "lra-v1.2"; "" when not a released manifest
  std::string configuration;                   // --reference: the configuration's entry in words, else ""
  int64_t micro_batch = 0, eval_batch = 0, eval_pass = 0, seeds = 1;  // eval_pass: examples per forward pass
  BenchPoint train;                            // the training-step measurement (status, steps/s, memory, MFU)
  // A self-pretraining manifest ([pretrain]): its first phase's steps and their
  // measurement (masked-token steps at [pretrain]'s batch); 0 steps = from scratch.
  int64_t pretrain_steps = 0;
  BenchPoint pretrain;
  double eval_batches_per_s = 0;               // 0 when not measured (training failed)
  SplitSizes splits;
  RunSchedule schedule;
  RunPrediction prediction;                    // meaningful when train.status == "ok"
  bool ok() const {
    return train.status == "ok" && eval_batches_per_s > 0 && (pretrain_steps == 0 || pretrain.status == "ok");
  }
};

// Every plugin, task and manifest is resolved before anything is measured.
BenchOutcome run_task_bench(const BenchArgs& a, spdlog::logger& log);

}  // namespace lra::host::bench
