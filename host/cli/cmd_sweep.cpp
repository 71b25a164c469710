// `lrahost sweep`: plan a study, run it (runs/sweep.h), or collect its
// results into a table.
#include <cstdio>

#include "cli/commands.h"
#include "device/blas_kernels.h"
#include "lra/status.h"
#include "runs/sweep.h"

namespace lra::host {

int sweep_command(const SweepArgs& a) {
  if (!a.collect.empty()) {
    const SweepCollection c = collect_sweep(a);
    std::printf("%s\nwritten: %s, leaderboard.json\n", c.markdown.c_str(), (c.dir / "leaderboard.md").c_str());
    return 0;
  }
  if (a.run_index) {
    load_best_blas_kernels();  // may start the program again: before any other work
    return run_sweep_entry(a);
  }
  if (a.plugins.empty() || a.tasks.empty() || a.out.empty())
    throw Error(ErrorKind::usage, "lrahost sweep needs --plugins, --tasks and --out (or --collect DIR)");
  return plan_sweep(a);
}

void add_sweep_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<SweepArgs>();
  auto* sp = app.add_subcommand("sweep", "Plan every plugin x task x seed as one Slurm job array (or run them here), "
                                         "and collect the results");
  sp->add_option("--plugins", a->plugins, "Comma-separated mixer plugins: built-in NAMEs, PATHs of C++ plugins (.so) or Python classes FILE.py:CLASS");
  sp->add_option("--tasks", a->tasks, "Comma-separated tasks");
  sp->add_option("--seeds", a->seeds, "Comma-separated trial seeds");
  sp->add_option("--out", a->out, "Sweep directory (sweep.json, sweep.sbatch, runs/, logs/)");
  add_preset_option(sp, a->preset, "official or smoke");
  sp->add_option("--set", a->sets, "KEY=VALUE passed to every run");
  sp->add_option("--data-dir", a->data_dir, "Data root for every run");
  sp->add_flag("--slurm", a->slurm, "Write a Slurm job array (sweep.sbatch) instead of running here");
  sp->add_flag("--submit", a->submit, "With --slurm: submit it with sbatch");
  sp->add_option("--partition", a->partition, "Slurm partition");
  sp->add_option("--time", a->time, "Slurm time limit per run, e.g. 04:00:00");
  sp->add_option("--gpus", a->gpus, "GPUs per run (--gres=gpu:N)");
  sp->add_option("--cpus", a->cpus, "CPUs per run");
  sp->add_option("--mem", a->mem, "Memory per run, e.g. 32G");
  sp->add_option("--max-parallel", a->max_parallel, "At most this many array tasks at once (0 = no limit)");
  sp->add_option("--job-name", a->job_name, "Slurm job name");
  sp->add_option("--collect", a->collect, "Gather the results of the sweep in DIR into leaderboard.md/json");
  sp->add_option("--run-index", a->run_index, "Run entry I of the plan in DIR (what each array task does)");
  sp->add_option("dir", a->run_dir, "The sweep directory, with --run-index");
  add_threads_option(sp, a->threads, "CPU threads for --run-index (0 = all cores)");
  on_parsed(sp, slot, a, [](SweepArgs& args) { return sweep_command(args); });
}

}  // namespace lra::host
