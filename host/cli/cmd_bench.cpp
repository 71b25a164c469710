// `lrahost bench`: the LRA paper's speed/memory protocol (Table 2) for any set
// of mixer plugins and lengths (bench/bench_run.h), and its table on stdout.
#include <cstdio>

#include "bench/bench_run.h"
#include "bench/decode_bench.h"
#include "bench/task_bench.h"
#include "cli/commands.h"
#include "device/blas_kernels.h"
#include "manifest/presets.h"
#include "cli/console_log.h"
#include "common/dir_lock.h"
#include "device/device.h"
#include "manifest/manifest.h"
#include "train/trainer.h"

namespace lra::host {

int bench_command(const BenchArgs& a) {
  load_best_blas_kernels();  // may start the program again: before the lock below
  // One writer per output directory (common/dir_lock.h); created now, removed
  // again when the command fails before writing anything into it.
  const DirLock lock(a.out);
  if (!a.report.empty()) {
    const bench::BenchOutcome r = bench::merge_bench_reports(a);
    std::printf("%s\nresults: %s, bench.md, bench.svg\n", r.markdown.c_str(), (r.out / "bench.json").c_str());
    return 0;
  }
  configure_cpu_threads(effective_threads(a.threads));
  auto log = make_logger();
  if (a.decode) {
    const bench::BenchOutcome r = bench::run_decode_bench(a, *log);
    std::printf("\n%s\nresults: %s, decode.md\n", r.markdown.c_str(), (r.out / "decode.json").c_str());
    return 0;
  }
  const bench::BenchOutcome r = a.task.empty() ? bench::run_bench(a, *log) : bench::run_task_bench(a, *log);
  std::printf("\n%s", r.markdown.c_str());
  std::printf("\nresults: %s, bench.md%s\n", (r.out / "bench.json").c_str(), a.task.empty() ? ", bench.svg" : "");
  return 0;
}

void add_bench_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<BenchArgs>();
  auto* b = app.add_subcommand("bench", "Training speed and peak memory per plugin and length (the LRA paper's "
                                        "Table 2 protocol, Text backbone); with --task, a task's whole run "
                                        "timed and its wall time predicted");
  b->add_option("--plugins", a->plugins,
                "Comma-separated mixer plugins (names or paths), or all (default: all; with --task: transformer)");
  auto* lengths = b->add_option("--lengths", a->lengths, "Comma-separated sequence lengths");
  auto* batch = b->add_option("--batch", a->batch, "Examples per step (LRA: 32)");
  auto* task = b->add_option("--task", a->task,
                             "Time this task's manifest as `run` trains it (its backbone, batch, length, evaluation "
                             "cadence) and predict the whole run; a comma-separated list, or suite = every task of "
                             "`lrahost suite`");
  task->excludes(lengths)->excludes(batch);
  b->add_option("--preset", a->preset, "With --task: the manifest preset (official, smoke)")->needs(task);
  b->add_option("--protocol", a->protocol,
                "With --task: scratch (default) or spt (self-pretraining: both phases timed and predicted)")
      ->check(CLI::IsMember(protocol_names()))
      ->needs(task);
  b->add_option("--reference", a->reference,
                "With --task: time and predict the runs `run --reference NAME` makes (table1: LRA's Table 1 "
                "settings of each built-in mixer: its backbone and mixer options)")
      ->needs(task);
  b->add_option("--micro-batch", a->micro_batch,
                "With --task: accumulate gradients over micro-batches of this size, as run --micro-batch")
      ->needs(task);
  b->add_option("--eval-pass-factor", a->eval_pass_factor,
                "With --task: time evaluation in forward passes this many times as large as run's "
                "(eval_batch_size, or the micro-batch); the prediction counts the batches they cover")
      ->check(CLI::Range(int64_t{1}, int64_t{64}))
      ->needs(task);
  auto* decode = b->add_flag("--decode", a->decode,
                              "Generation instead of training: tokens/s, latency per token and memory per sequence "
                              "after a context of each of --lengths tokens, in the causal LM's shape; mixers that do "
                              "not decode token by token are measured by recomputation and marked so");
  decode->excludes(task);
  b->add_option("--tokens", a->tokens, "With --decode: timed tokens per context (after one untimed)")->needs(decode);
  b->add_option("--warmup", a->warmup, "Untimed steps first (allocator, kernels, caches)");
  b->add_option("--steps", a->steps, "Steps per timed repetition");
  b->add_option("--repeats", a->repeats, "Timed repetitions (the median is reported)");
  b->add_option("--accuracy", a->accuracy, "result.json files: mean test accuracy per plugin for the speed/accuracy chart");
  b->add_option("--report", a->report, "Merge these bench.json files into one bench.json/md/svg; measure nothing")
      ->excludes(task)
      ->excludes(decode);
  b->add_option("--out", a->out, "Output directory (bench.json, bench.md, bench.svg)");
  add_device_option(b, a->device);
  add_fp32_flag(b, a->fp32);
  b->add_option("--cuda-graphs", a->cuda_graphs,
                "On CUDA, training steps captured in a CUDA graph and replayed, as `run --cuda-graphs`: auto (where "
                "the mixer declares graph_safe), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  add_threads_option(b, a->threads);
  // Decoding is measured one sequence at a time unless --batch says otherwise.
  on_parsed(b, slot, a, [batch](BenchArgs& args) {
    if (args.decode && batch->count() == 0) args.batch = 1;
    return bench_command(args);
  });
}

}  // namespace lra::host
