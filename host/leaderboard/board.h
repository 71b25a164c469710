// The leaderboard as data: verified result files scored per entry and split by
// division, invalid results with their reasons, the paper's reference rows and
// bench measurements for the chart. The site writers (site_html, site_markdown,
// site_json) only render this.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_point.h"
#include "leaderboard/scores.h"
#include "leaderboard/suite_sections.h"
#include "results/submission.h"
#include "results/verify.h"

namespace lra::host {

struct InvalidResult {
  std::string source;
  std::string plugin, task, claimed_division;  // "" where the file does not say
  std::vector<std::string> reasons;            // from verify, or from the re-evaluation report
  std::string failed = "verify";               // which check refused it: "verify" or "re-evaluation"
};

struct Leaderboard {
  std::string title;
  std::string generator;                       // e.g. "lrahost 0.1.0 (0123abc)"
  std::vector<ScoreEntry> closed, open;        // the verified division, ranked best first
  // Closed results of the self-pretraining protocol (lra-spt-v1): their own
  // table, never ranked with from-scratch results. Open self-pretrained
  // results are in `open`, their protocol said (ScoreEntry::protocol).
  std::vector<ScoreEntry> self_pretrained;
  // The open division's reference rows (leaderboard --baselines): built-in
  // mixers measured by this host, e.g. docs/measured/cpu/baselines/. Verified
  // like any result, never ranked, shown after the open entries.
  std::vector<ScoreEntry> open_baselines;
  // One section per suite other than LRA (manifest/suites.h: MQAR, MAD), in
  // suite_defs() order, each with its own divisions and baselines; their
  // results are never in the tables above (leaderboard/suite_sections.h).
  std::vector<SuiteSection> suites;
  std::vector<InvalidResult> invalid;          // not ranked
  std::vector<std::string> task_columns;       // the six LRA tasks, then any task of no suite found (sorted)
  std::size_t result_files = 0;
  std::vector<bench::BenchPoint> bench;        // all bench.json points, in file order
  std::vector<std::string> bench_sources;
  // Plugin -> LRA average (%) placed on the chart: of the entries of a plugin
  // measured by bench, the closed one with the best average, else the open one.
  std::map<std::string, double> chart_accuracy_percent;
};

// Reads everything, before anything is written. Each result file goes through
// verify (with `official`): the division shown is the verified one; invalid
// results are listed, not scored. Throws lra::Error(data) for a result file
// that cannot be read or parsed, or a valid one that lacks what scoring needs;
// lra::Error(usage) for a bench.json that cannot be read or is malformed.
// `official_seeds` gives each task's official trial seeds: a closed entry
// missing some of them gets a note (it stays ranked; verify is the gate).
// `trusted_verifiers` (key id -> raw Ed25519 public key, as load_trusted_keys
// returns): a reevaluation.json beside a result counts, for it ("re-evaluated",
// "private set") or against it (listed invalid), only when signed by one of
// them, intact and bound to that result's digest; any other report is shown
// as "re-evaluation unverified (why)" and the result scored as verify says.
// Strings from results are published bounded (site_text.h: kMaxNameBytes, kMaxTextBytes).
// `baselines.files` become open_baselines. Each must verify (else
// lra::Error(data)), be open (a closed one is a result to rank:
// lra::Error(usage)), name a mixer in `baselines.builtin_mixers`
// (lra::Error(usage)) and not also be among `result_files`
// (lra::Error(usage)): a baseline that cannot be trusted is the maintainer's
// error, not an entry to list as invalid.
struct BaselineInputs {
  std::vector<std::filesystem::path> files;
  std::vector<std::string> builtin_mixers;  // the host's own mixers (plugins/loader.h: builtin_mixer_names)
};
Leaderboard build_leaderboard(const std::vector<std::filesystem::path>& result_files,
                              const std::vector<std::filesystem::path>& bench_files, const OfficialLookup& official,
                              const OfficialSeeds& official_seeds,
                              const std::map<std::string, std::string>& trusted_verifiers = {},
                              const BaselineInputs& baselines = {});

// Competition ranking by LRA average ("1, 2, 2, 4"); nullopt for entries without one.
std::vector<std::optional<int>> average_ranks(const std::vector<ScoreEntry>& ranked);

}  // namespace lra::host
