#include "leaderboard/board.h"
#include "common/json_file.h"
#include "common/json_input.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "bench/bench_report.h"
#include "lra/status.h"
#include "leaderboard/result_checks.h"
#include "leaderboard/site_text.h"
#include "leaderboard/suite_sections.h"
#include "manifest/suites.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void read_bench(Leaderboard& board, const std::vector<fs::path>& files) {
  for (const auto& f : files) {
    const json doc = read_json_file(f, ErrorKind::usage, "bench.json (written by lrahost bench)");
    auto points = bench::bench_points_from_json(doc, f.string());
    board.bench.insert(board.bench.end(), points.begin(), points.end());
    board.bench_sources.push_back(f.string());
  }
  std::set<std::string> measured;
  for (const auto& p : board.bench) measured.insert(p.plugin);
  // Closed first: a plugin's closed average is the comparable one. Each list is ranked, so the first hit is the best.
  for (const auto* division : {&board.closed, &board.open})
    for (const auto& e : *division)
      if (e.lra_average && measured.count(e.plugin) && !board.chart_accuracy_percent.count(e.plugin))
        board.chart_accuracy_percent[e.plugin] = 100 * *e.lra_average;
}

// A closed entry without some of its task's official trial seeds: said in a note (verify --submission refuses it).
void note_missing_seeds(ScoreEntry& entry, const std::string& task, const std::vector<int64_t>& seeds,
                        const OfficialSeeds& official_seeds) {
  const auto want = official_seeds(task, "");  // the current release's trial seeds
  if (!want) return;
  const std::vector<int64_t> missing = missing_seeds(*want, seeds);
  if (!missing.empty())
    entry.notes.push_back(task + ": seed" + (missing.size() == 1 ? " " : "s ") + seed_list_text(missing) + " of " +
                          seed_list_text(*want) + " missing");
}

void note_missing_seeds(ScoreEntry& entry, const OfficialSeeds& official_seeds) {
  for (const auto& [task, score] : entry.tasks) note_missing_seeds(entry, task, score.seeds, official_seeds);
}

// "sha256:0123456789ab…" for notes.
std::string site_short(const std::string& fingerprint) {
  return fingerprint.size() > 19 ? fingerprint.substr(0, 19) + "…" : fingerprint;
}

// The same file named twice (a path and its folder, a symlink) is one file.
std::string file_identity(const fs::path& file) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(file, ec);
  return ec ? file.lexically_normal().string() : canonical.string();
}

// The suite whose own section a result goes to (manifest/suites.h: a suite
// other than LRA, e.g. MQAR, MAD); nullptr: LRA's tables (LRA's tasks, and
// tasks of no suite, which become extra columns there).
const SuiteDef* section_suite(const json& result) {
  const SuiteDef* suite = suite_of_task(string_at(result, "task", "name"));
  return suite && !suite->lra_average ? suite : nullptr;
}

// Valid results, LRA's and each section suite's apart, with how far each was checked.
struct Sorted {
  std::vector<ScoreInput> lra;
  std::map<std::string, std::vector<ScoreInput>> suites;  // suite name -> its results
  std::map<std::string, ResultChecks> checks;             // result file -> how far it was checked
  void add(ScoreInput in) {
    if (const SuiteDef* s = section_suite(in.result)) suites[s->name].push_back(std::move(in));
    else lra.push_back(std::move(in));
  }
};

// Each section suite's entries of `sorted`, their checks counted; `each` then
// sees every entry (notes, the baselines' own checks) before it is bounded.
template <class Each>
std::map<std::string, std::vector<SuiteEntry>> suite_entries(Sorted& sorted, Each each) {
  std::map<std::string, std::vector<SuiteEntry>> out;
  for (const auto& def : suite_defs()) {
    if (def.lra_average) continue;
    for (auto& se : aggregate_suite_entries(def, sorted.suites[def.name])) {
      count_checks(se.entry, sorted.checks);
      each(se, def);
      bound_entry(se.entry);
      out[def.name].push_back(std::move(se));
    }
  }
  return out;
}

// leaderboard --baselines: the host's own measured rows of the open division
// (of LRA's tables, or of a suite's section).
// Unlike a submitted result, a baseline that fails a check stops the command:
// the maintainer passed it, and a reference row that cannot be trusted must not be shown.
struct Baselines {
  std::vector<ScoreEntry> lra;
  std::map<std::string, std::vector<SuiteEntry>> suites;
};
Baselines read_baselines(const BaselineInputs& baselines, const std::vector<fs::path>& result_files,
                         const OfficialLookup& official, const std::map<std::string, std::string>& trusted_verifiers) {
  std::set<std::string> results;
  for (const auto& f : result_files) results.insert(file_identity(f));
  Sorted sorted;
  for (const auto& file : baselines.files) {
    const std::string where = "--baselines " + file.string();
    if (results.count(file_identity(file)))
      throw Error(ErrorKind::usage, where + ": given both as a result and as a baseline; pass it once, as one or the other");
    CheckedResult c = check_result_file(file, official, trusted_verifiers);
    if (!c.report.readable || c.invalid) {
      const auto& reasons = c.invalid ? c.invalid->reasons : c.report.reasons;
      throw Error(ErrorKind::data, where + ": " +
                                       (c.invalid && c.invalid->failed == "re-evaluation" ? "failed a trusted re-evaluation"
                                                                                          : "does not verify") +
                                       " (" + (reasons.empty() ? std::string("cannot read it") : reasons.front()) +
                                       "); a baseline must pass lrahost verify: measure it again with lrahost run");
    }
    if (c.report.division != "open")
      throw Error(ErrorKind::usage, where + ": a " + c.report.division + " result; baselines are the open division's "
                                            "reference rows: pass a closed result as a result to rank it");
    sorted.checks[file.string()] = c.checks();
    sorted.add({file.string(), std::move(c.result)});
  }
  auto builtin_only = [&](const ScoreEntry& entry) {
    const auto& builtin = baselines.builtin_mixers;
    if (std::find(builtin.begin(), builtin.end(), entry.plugin) == builtin.end())
      throw Error(ErrorKind::usage, "--baselines " + entry.sources.front() + ": plugin '" + entry.plugin +
                                        "' is not a built-in mixer of lrahost; baselines are the host's own mixers "
                                        "measured by it (pass other results as results)");
  };
  Baselines out;
  out.lra = aggregate_scores(sorted.lra);
  for (auto& entry : out.lra) {
    builtin_only(entry);
    count_checks(entry, sorted.checks);
    bound_entry(entry);
  }
  out.suites = suite_entries(sorted, [&](const SuiteEntry& se, const SuiteDef&) { builtin_only(se.entry); });
  return out;
}

}  // namespace

Leaderboard build_leaderboard(const std::vector<fs::path>& result_files, const std::vector<fs::path>& bench_files,
                              const OfficialLookup& official, const OfficialSeeds& official_seeds,
                              const std::map<std::string, std::string>& trusted_verifiers,
                              const BaselineInputs& baselines) {
  Leaderboard board;
  // Baselines first: a bad one stops the command before any work on the results.
  Baselines base = read_baselines(baselines, result_files, official, trusted_verifiers);
  board.open_baselines = std::move(base.lra);
  board.result_files = result_files.size();
  Sorted valid;
  std::map<std::string, std::string> release_notes;  // closed result file -> what its release means for it
  // (plugin, sha256, section suite or "" for LRA's tables) -> notes
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::string>> extra_seeds;
  std::map<std::string, std::string> hint_notes;  // result file -> its mixer's optimizer hints, in words
  // Closed results of one task and manifest should all have trained on the
  // same data; downloaded data cannot be checked by verify, so disagreement
  // is flagged here: result file -> (task + manifest, fingerprint).
  std::map<std::string, std::pair<std::string, std::string>> data_used;
  std::map<std::string, std::map<std::string, int>> fingerprint_counts;
  for (const auto& file : result_files) {
    CheckedResult checked = check_result_file(file, official, trusted_verifiers);
    const VerifyReport& report = checked.report;
    if (!report.readable) {
      const std::string why = report.reasons.empty() ? "cannot read it" : report.reasons.front();
      throw Error(ErrorKind::data, file.string() + ": " + why + " (pass result.json files written by lrahost run)");
    }
    if (checked.invalid) {
      board.invalid.push_back(std::move(*checked.invalid));
      continue;
    }
    json& result = checked.result;
    valid.checks[file.string()] = checked.checks();
    if (report.division == "closed") {
      const json* fp = json_at(result, {"task", "data_fingerprint"});
      const std::string key = string_at(result, "task", "name") + " " + string_at(result, "task", "manifest_sha256");
      data_used[file.string()] = {key, fp ? (fp->is_string() ? fp->get<std::string>() : fp->dump()) : ""};
      ++fingerprint_counts[key][data_used[file.string()].second];
    }
    // A mixer's optimizer hints (SDK 1.2) are allowed in both divisions and said next to the score.
    if (const json* groups = json_at(result, {"optimizer", "groups"}); groups && groups->is_array() && groups->size() > 1) {
      std::string words;
      for (size_t i = 1; i < groups->size(); ++i) {
        const json& g = (*groups)[i];
        const json* names = g.is_object() ? json_at(g, {"names"}) : nullptr;
        const json* rule = g.is_object() ? json_at(g, {"rule"}) : nullptr;
        words += (i > 1 ? "; " : "") + std::to_string(names && names->is_array() ? names->size() : 0) +
                 " tensor(s): " + (rule && rule->is_string() ? rule->get<std::string>() : std::string("?"));
      }
      hint_notes[file.string()] = string_at(result, "task", "name") + ": optimizer hints (" + words + ")";
    }
    if (report.release) {
      // The release comes from the manifest hash; older or annotated ones are said next to the score.
      const OfficialManifest& r = *report.release;
      std::string note;
      if (!r.superseded_by.empty()) note = "release " + r.release + " (superseded by " + r.superseded_by + ")";
      if (!r.note.empty()) note += (note.empty() ? "release " + r.release + ": " : ": ") + r.note;
      if (!note.empty()) release_notes[file.string()] = string_at(result, "task", "name") + ": " + note;
    }
    // A closed entry is scored over the official trial seeds only; others are named, not averaged.
    if (report.division == "closed") {
      const std::string task = string_at(result, "task", "name");
      const auto seeds = official_seeds(task, string_at(result, "task", "manifest_sha256"));
      const json* seed = json_at(result, {"seed"});
      if (seeds && seed && seed->is_number_integer() &&
          std::find(seeds->begin(), seeds->end(), seed->get<int64_t>()) == seeds->end()) {
        const SuiteDef* suite = section_suite(result);
        extra_seeds[{string_at(result, "plugin", "name"), string_at(result, "plugin", "sha256"), suite ? suite->name : ""}]
            .push_back(
            task + ": seed " + std::to_string(seed->get<int64_t>()) + " not averaged (not an official trial seed of " +
            (report.release ? "release " + report.release->release : std::string("its release")) + ": " +
            seed_list_text(*seeds) + ")");
        continue;
      }
    }
    valid.add({file.string(), std::move(result)});
  }
  // What an entry's results say beside its scores; `suite`: "" for LRA's tables.
  auto add_notes = [&](ScoreEntry& entry, const std::string& suite) {
    auto note = [&](const std::string& text) {
      if (std::find(entry.notes.begin(), entry.notes.end(), text) == entry.notes.end()) entry.notes.push_back(text);
    };
    if (entry.division == "closed") {
      if (const auto it = extra_seeds.find({entry.plugin, entry.plugin_sha256, suite}); it != extra_seeds.end())
        for (const auto& text : it->second) note(text);
      for (const auto& src : entry.sources) {
        const auto it = data_used.find(src);
        if (it == data_used.end()) continue;
        const auto& counts = fingerprint_counts[it->second.first];
        if (counts.size() < 2) continue;
        // The fingerprint most closed results of this task and manifest share.
        const auto common = std::max_element(counts.begin(), counts.end(),
                                             [](const auto& a, const auto& b) { return a.second < b.second; });
        if (it->second.second == common->first) continue;
        const std::string task = it->second.first.substr(0, it->second.first.find(' '));
        note(task + ": trained on other data than the other closed " + task + " results (task.data_fingerprint " +
             site_short(it->second.second) + ", most have " + site_short(common->first) + ")");
      }
      for (const auto& src : entry.sources)
        if (auto it = release_notes.find(src); it != release_notes.end()) note(it->second);
    }
    for (const auto& src : entry.sources)
      if (auto it = hint_notes.find(src); it != hint_notes.end()) note(it->second);
  };
  for (auto& entry : aggregate_scores(valid.lra)) {
    count_checks(entry, valid.checks);
    if (entry.division == "closed") note_missing_seeds(entry, official_seeds);
    add_notes(entry, "");
    bound_entry(entry);
    (entry.division != "closed"                ? board.open
     : entry.protocol == "self-pretrained" ? board.self_pretrained
                                           : board.closed)
        .push_back(entry);
  }
  // The other suites' sections: the same checks and notes, their own entries.
  auto sections = suite_entries(valid, [&](SuiteEntry& se, const SuiteDef& def) {
    if (se.entry.division == "closed")
      for (const auto& [task, t] : se.tasks) note_missing_seeds(se.entry, task, t.seeds, official_seeds);
    add_notes(se.entry, def.name);
  });
  for (const auto& def : suite_defs()) {
    if (def.lra_average) continue;
    SuiteSection section{def.name, def.protocol, def.what, suite_task_columns(def), {}, {}, std::move(base.suites[def.name])};
    for (auto& se : sections[def.name]) (se.entry.division == "closed" ? section.closed : section.open).push_back(std::move(se));
    board.suites.push_back(std::move(section));
  }

  board.task_columns = lra_task_order();
  std::set<std::string> extra;
  for (const auto* division : {&board.closed, &board.self_pretrained, &board.open, &board.open_baselines})
    for (const auto& e : *division)
      for (const auto& [task, score] : e.tasks)
        if (std::find(board.task_columns.begin(), board.task_columns.end(), task) == board.task_columns.end())
          extra.insert(task);
  board.task_columns.insert(board.task_columns.end(), extra.begin(), extra.end());

  for (auto& r : board.invalid) bound_invalid(r);
  read_bench(board, bench_files);
  return board;
}

std::vector<std::optional<int>> average_ranks(const std::vector<ScoreEntry>& ranked) {
  std::vector<std::optional<double>> averages;
  for (const auto& e : ranked) averages.push_back(e.lra_average);
  return competition_ranks(averages);
}

}  // namespace lra::host
