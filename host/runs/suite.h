// runs/suite.h — `lrahost suite`'s work: one plugin on every task of a suite
// (manifest/suites.h: LRA, MQAR, MAD), every trial seed and every point of a
// manifest's [grid], each an `lrahost run` in its own process
// (runs/child_runs.h; a failing task is recorded and the rest go on), then
// suite.json and suite.md: accuracy mean ± std per task and the LRA average,
// scored exactly as the leaderboard scores them, and for a grid the best
// training point per model point, chosen on validation (runs/suite_grid.h).
// An interrupted suite continues where it stopped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lra::host {

struct SuiteArgs {
  std::string plugin, out, preset = "official";
  std::string protocol = "scratch";  // "spt": every run self-pretrains (--protocol, docs/rules.md)
  std::string suite = "lra";  // --suite (manifest/suites.h)
  std::string tasks;          // comma-separated; "" = the suite's tasks that have a manifest in the preset
  std::optional<std::string> seeds;     // comma-separated; default: the manifest's rules.seeds
  std::vector<std::string> sets;        // passed to every run
  std::optional<std::string> reference; // --reference NAME, passed to every run (plugins/reference_configuration.h)
  std::optional<std::string> data_dir;
  std::string device = "auto";
  int threads = 0;
  int64_t micro_batch = 0;
  bool fp32 = false;
  std::optional<std::string> sign_key;  // passed to every run
  bool retry_failed = false;  // a finished suite (suite.json) runs again what has no result
};

struct SuiteOutcome {
  std::filesystem::path out;  // the suite directory (absolute)
  std::string markdown;       // suite.md
  int first_failure = 0;      // 0 when every run succeeded, else the first failed run's exit code
};

// Everything that can be refused is refused before the first run starts.
// Prints a line per run on stdout as it goes.
SuiteOutcome run_suite(const SuiteArgs& a);

}  // namespace lra::host
