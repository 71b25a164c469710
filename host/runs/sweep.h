// runs/sweep.h — `lrahost sweep`'s work: every plugin x task x seed of a
// study as one plan (sweep.json), run as a Slurm job array (--slurm
// [--submit]) or one after another here, each entry an `lrahost run` in its
// own process (runs/child_runs.h); and collecting the results into a table,
// scored as `lrahost leaderboard` and `lrahost suite` score them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lra::host {

struct SweepArgs {
  std::string plugins, tasks, seeds = "0", out, preset = "official";
  std::vector<std::string> sets;
  std::optional<std::string> data_dir;
  bool slurm = false, submit = false;
  std::string partition, time, mem, job_name = "lrahost";
  int64_t gpus = 0, cpus = 4, max_parallel = 0;
  std::string collect;                 // --collect DIR
  std::optional<int64_t> run_index;    // --run-index I DIR: one entry (what each array task runs)
  std::string run_dir;
  int threads = 0;
};

// Writes the plan into --out, then runs it here (a line per entry on stdout;
// returns 0 when every run succeeded, else the first failed run's exit code)
// or writes the Slurm job array (and with --submit submits it; returns 0).
int plan_sweep(const SweepArgs& a);

// Entry --run-index of the plan in run_dir: replaces this process with its
// `lrahost run` (returns 0 when the entry already has its result).
int run_sweep_entry(const SweepArgs& a);

// --collect DIR: leaderboard.md and leaderboard.json written into DIR.
struct SweepCollection {
  std::filesystem::path dir;
  std::string markdown;  // leaderboard.md
};
SweepCollection collect_sweep(const SweepArgs& a);

}  // namespace lra::host
