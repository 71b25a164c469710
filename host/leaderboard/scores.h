// Scores per entry (plugin build + options + division) from result.json files:
// per-task accuracy mean ± std over seeds, the LRA average over the five tasks
// other than Path-X, and Path-X's FAIL mark (the paper's: no better than
// chance). Shared by `lrahost suite` (its summary), `lrahost sweep --collect`
// and `lrahost leaderboard`, so all three print the same numbers.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lra::host {

// The six LRA tasks in the paper's column order.
const std::vector<std::string>& lra_task_order();
// The five tasks the LRA average is taken over (all but pathx).
const std::vector<std::string>& lra_average_tasks();

struct TaskScore {
  std::vector<double> accuracies;  // test accuracy in [0, 1], one per result, in seed order
  std::vector<int64_t> seeds;      // the matching trial seeds
  double mean = 0.0;
  double std = 0.0;                // sample standard deviation over seeds; 0 with one seed
  int64_t test_examples = 0;       // summed over seeds (task.examples.test)
  // One-sided exact binomial p-value of the pooled correct count against 50%
  // (H0: accuracy <= 0.5). Computed for every task; used for pathx.
  double p_above_chance = 1.0;
  bool fail = false;               // pathx only: p_above_chance >= 0.05, shown as FAIL (mean counts as 50%)
  // Mean of the results' metrics.majority_class_rate (the accuracy of always
  // answering the test set's most common class); unset when one lacks it.
  std::optional<double> majority_class;
};

// For a built-in mixer: whether an entry ran with the LRA reference settings
// (manifests/reference-mixers/), derived by comparing each result's
// plugin.options with the table compiled into this host — never from the
// result's own plugin.reference_settings.used.
struct ReferenceUse {
  std::string table;                                        // e.g. "reference-mixers/lra-v1.toml"
  bool used = false;                                        // every result had its task's settings
  std::map<std::string, std::vector<std::string>> differs;  // task -> options that differ, when not used
};

// What ReferenceUse::differs says for a task its table has no entry for.
inline constexpr const char* kNoReferenceEntry = "(no entry for this task)";

struct ScoreEntry {
  std::string plugin, plugin_version, plugin_sha256;
  // The mixer's options as recorded; for a built-in mixer, whose reference
  // settings differ per task, only the options that differ from them (the
  // same for every task of the entry; empty when it used them).
  nlohmann::json options = nlohmann::json::object();
  // Set for a built-in mixer: results whose plugin.reference_settings is an
  // object (run writes null for any other plugin) and whose plugin.name the
  // reference table knows. std::nullopt otherwise, also for results written
  // before the field existed.
  std::optional<ReferenceUse> reference;
  std::string division;                                // "closed" or "open"
  // Open entries: the preset (or custom manifest) and overrides every result
  // of the entry was made with, e.g. "preset smoke; overrides train.steps=60";
  // part of what makes an entry (see aggregate_scores). Empty when closed.
  std::string made_with;
  // "from scratch" (LRA's protocol) or "self-pretrained" (docs/rules.md
  // "Self-pretraining"); results of the two are never one entry.
  std::string protocol = "from scratch";
  std::map<std::string, TaskScore> tasks;              // by task name
  std::optional<double> lra_average;                   // when all five average tasks are present
  std::vector<std::string> sources;                    // result files that went in
  // Shown next to the entry, e.g. "listops: seeds 1, 2 of 0, 1, 2 missing"
  // (a closed entry whose trial seeds are incomplete; lrahost verify refuses such a submission).
  std::vector<std::string> notes;
  // How far the entry's results were checked (filled by the leaderboard;
  // counts over `sources`). Every result passed verify (digest, division,
  // budget) or it would not be here.
  struct Checks {
    int results = 0;
    int signed_results = 0;           // a signature that verifies against its public key
    std::vector<std::string> signers; // their key ids, sorted, once each
    // Re-evaluation evidence counts only from a reevaluation.json signed by a
    // trusted verifier key (leaderboard --trusted-verifiers), bound to the result's digest.
    int reevaluated = 0;              // such a report beside it says valid
    int private_checked = 0;          // of those, scored on a private test set without a significant gap
    std::vector<std::string> verifiers;  // the key ids that vouched, sorted, once each
    int reevaluation_unverified = 0;  // a reevaluation.json beside it that is not believed, so not counted
    int reevaluated_by_author = 0;    // one signed by the page builder's own author key: shown, not counted
    std::vector<std::string> unverified_reasons;  // why, in fixed words ("unsigned", "unknown key ed25519:…", ...)
    // Closed results on LRA's release files (task.lra_release_files) that no
    // trusted re-evaluation checked against the maintainer's own copy: verify
    // alone judges release files by their counts, which another set of the
    // release's layout (an easier Pathfinder difficulty) also has.
    int data_not_checked = 0;
  } checks;
};

struct ScoreInput {
  std::string source;    // file path (for messages and `sources`)
  nlohmann::json result; // a parsed result.json
};

// Groups results by (plugin name, plugin sha256, options, division) and scores
// each group; a built-in mixer's options count as their difference from its
// task's reference settings, so a suite run with the reference settings (or
// one --set on top of them) is one entry although its options differ per task. Results that lack the fields needed (metrics.test_accuracy in
// [0, 1], plugin.name, task.name, seed, task.examples.test > 0) throw
// lra::Error(data) naming the source and field; so do two different results
// for the same seed of one entry and task (the same file twice, recognised by
// its digest, counts once). "division" defaults to "open" when absent.
// Entries come out sorted by LRA average (descending; entries without one
// last), then by plugin name.
std::vector<ScoreEntry> aggregate_scores(const std::vector<ScoreInput>& results);

// The per-result checks of aggregate_scores alone: throws the same
// lra::Error(data) for a result it would refuse (for callers that report a
// bad file and go on, as `sweep --collect` does).
void check_score_input(const ScoreInput& input);

// One result as aggregate_scores reads it, for callers that group results
// further (the recall suites' sections, leaderboard/suite_sections.h): `key`
// is the entry it belongs to (plugin name, build, options — a built-in
// mixer's as compared with its reference settings —, how an open one was
// made, division, protocol); `entry` the entry it would make alone (no task
// scored, sources = {its source}). Throws as check_score_input does.
struct EntryResult {
  std::vector<std::string> key;
  ScoreEntry entry;
  std::string task, digest;
  int64_t seed = 0;
};
EntryResult entry_result(const ScoreInput& input);
// Adds the one-result entry `one` of the same key to `entry`, as
// aggregate_scores does: its sources and its reference-settings verdict.
void add_entry_result(ScoreEntry& entry, const ScoreEntry& one);

// Competition ranks of scores sorted best first ("1, 2, 2, 4"); nullopt for
// an entry without a score (those come last).
std::vector<std::optional<int>> competition_ranks(const std::vector<std::optional<double>>& ranked_scores);

// P(X >= k) for X ~ Binomial(n, p), computed in log space (exact, stable for n in the millions).
double binomial_upper_tail(int64_t k, int64_t n, double p);

// {"plugin", "plugin_version", "plugin_sha256", "options", "division",
//  "reference_settings" (null, or {"table", "used", "differs": {task: [option...]}}),
//  "tasks": {task: {"mean","std","seeds","accuracies","test_examples","p_above_chance","fail"}},
//  "lra_average", "sources"} — the schema leaderboard.json and suite.json use.
nlohmann::json to_json(const ScoreEntry& entry);

// "36.37 ± 0.52" (percent, two decimals; "36.37" with one seed), "FAIL" for a failed pathx, "—" when absent.
std::string format_task_cell(const ScoreEntry& entry, const std::string& task);

// The LRA average as "54.39" (percent, two decimals), "—" when not all five tasks are present.
std::string format_average_cell(const ScoreEntry& entry);

}  // namespace lra::host
