// The leaderboard's sections for the suites other than LRA (manifest/suites.h:
// MQAR, MAD): their results never go into LRA's tables. An entry is a plugin
// build, options, division (how an open one was made) and model point (the
// result's values of the [grid] axes under "model.", e.g. "d_model 128"); per
// task, the training point is chosen on validation accuracy and a task's
// score is the mean over its settings of the chosen test accuracy — both by
// runs/suite_grid.h, the rule `lrahost suite` uses. The suite's score is the
// mean over its tasks, shown when every task has one. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "leaderboard/scores.h"
#include "manifest/suites.h"

namespace lra::host {

struct SuiteTaskScore {
  // The mean over the task's settings of the chosen point's test accuracy
  // (a fraction); nullopt unless every setting has a finished run.
  std::optional<double> score;
  int settings = 0;             // the task's settings among the entry's results ("" = the baseline setting)
  std::vector<int64_t> seeds;   // the chosen runs' seeds, distinct, ascending
  std::string chosen;           // the chosen training point(s), e.g. "lr 0.01"; "" without a training axis
  // The measured decoding state of the chosen runs at the longest length
  // measured (result.json's state_size; the most bytes there over the runs).
  std::optional<int64_t> state_bytes, state_length;
  std::string state_note;       // "" when every chosen run was measured; else why not, or how many were
  std::vector<std::string> chosen_sources;  // the chosen runs' files
  std::string no_score;  // why there is no score: "a setting without a finished run", "1 of its 6 official settings"
};

struct SuiteEntry {
  // Plugin, build, options, reference-settings marker, division, how it was
  // made, sources (every result of the entry), notes and checks, as an LRA
  // entry has them; its `tasks` and `lra_average` stay empty.
  ScoreEntry entry;
  std::string model;  // the model point, "d_model 128" ("" when the results had no model axis)
  std::map<std::string, SuiteTaskScore> tasks;
  std::optional<double> score;  // the mean over the suite's tasks, when every one has a score
};

struct SuiteSection {
  std::string suite, protocol, what;  // from its SuiteDef: "mqar", "zoology-v1", ...
  std::vector<std::string> tasks;     // its tasks, in the suite's order
  std::vector<SuiteEntry> closed, open, open_baselines;  // ranked by score, best first; baselines not ranked
  bool empty() const { return closed.empty() && open.empty() && open_baselines.empty(); }
};

// The suite's tasks: those with an official manifest, then any others its
// `order` lists, in that order.
std::vector<std::string> suite_task_columns(const SuiteDef& suite);

// The entries of one suite's results (every task in suite_of_task ==
// `suite`). Throws lra::Error(data) as aggregate_scores does for a result it
// cannot score, for two different results of one entry, task, setting, grid
// point and seed (naming both; the same file twice, by its digest, counts
// once), and for a [grid] axis whose value the result's config lacks. Ranked
// by score (entries without one last, then by plugin name).
std::vector<SuiteEntry> aggregate_suite_entries(const SuiteDef& suite, const std::vector<ScoreInput>& results);

// Competition ranks by score ("1, 2, 2, 4"); nullopt for entries without one.
std::vector<std::optional<int>> suite_ranks(const std::vector<SuiteEntry>& ranked);

// "87.50" (percent, two decimals), "—" without a score.
std::string suite_score_cell(const std::optional<double>& score);
// "66048 B at length 1024", or "not measured" (with the note, when short).
std::string suite_state_text(const SuiteTaskScore& task);

// leaderboard.json's entry of a section: plugin, plugin_version,
// plugin_sha256, options, reference_settings, division, made_with, protocol,
// model, tasks: {task: {score, settings, seeds (how many), chosen, state_bytes,
// state_length, state_note, chosen_sources}}, score, notes, checks, sources.
nlohmann::json to_json(const SuiteEntry& entry);

}  // namespace lra::host
