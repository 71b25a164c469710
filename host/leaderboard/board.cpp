#include "leaderboard/board.h"
#include "common/json_file.h"
#include "common/json_input.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "bench/bench_report.h"
#include "lra/status.h"
#include "leaderboard/site_text.h"
#include "leaderboard/reevaluation_report.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string string_at(const json& j, const char* outer, const char* inner) {
  if (!j.is_object()) return "";
  const auto o = j.find(outer);
  if (o == j.end()) return "";
  if (inner == nullptr) return o->is_string() ? o->get<std::string>() : "";
  if (!o->is_object()) return "";
  const auto i = o->find(inner);
  return i != o->end() && i->is_string() ? i->get<std::string>() : "";
}

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

void note_missing_seeds(ScoreEntry& entry, const OfficialSeeds& official_seeds) {
  for (const auto& [task, score] : entry.tasks) {
    const auto want = official_seeds(task, "");  // the current release's trial seeds
    if (!want) continue;
    const std::vector<int64_t> missing = missing_seeds(*want, score.seeds);
    if (!missing.empty())
      entry.notes.push_back(task + ": seed" + (missing.size() == 1 ? " " : "s ") + seed_list_text(missing) + " of " +
                            seed_list_text(*want) + " missing");
  }
}

// Path-X's test count must be what its own data hold: the official split for
// a closed result (verify has checked it), images - floor(0.8 n) - floor(0.1 n)
// of config.data.images otherwise (tasks/pathfinder's split). nullopt: fine,
// or not checkable (a result without config.data.images).
std::optional<std::string> pathx_count_problem(const json& result) {
  const json* test = json_at(result, {"task", "examples", "test"});
  const json* images = json_at(result, {"config", "data", "images"});
  if (!test || !test->is_number_integer() || !images || !images->is_number_integer()) return std::nullopt;
  const int64_t n = images->get<int64_t>();
  const int64_t expected = n - n * 8 / 10 - n / 10;
  if (test->get<int64_t>() == expected) return std::nullopt;
  return "Path-X count rejected: task.examples.test is " + test->dump() + ", but the result's own data (config.data.images " +
         std::to_string(n) + ") hold " + std::to_string(expected) + " test images; the chance test that marks Path-X "
         "FAIL cannot take its count on trust";
}

// "sha256:0123456789ab…" for notes.
std::string site_short(const std::string& fingerprint) {
  return fingerprint.size() > 19 ? fingerprint.substr(0, 19) + "…" : fingerprint;
}

// Caps the strings of a valid result that the pages publish and scoring
// groups by (site_text.h), before anything reads them.
void bound_result_strings(json& result) {
  for (const auto& path : std::vector<std::vector<const char*>>{
           {"plugin", "name"}, {"plugin", "version"}, {"plugin", "sha256"}, {"task", "name"}, {"task", "preset"},
           {"task", "manifest"}, {"division"}}) {
    json* v = &result;
    for (const char* key : path) v = v->is_object() && v->contains(key) ? &(*v)[key] : nullptr;
    if (v && v->is_string()) *v = site::bounded(v->get<std::string>(), site::kMaxNameBytes);
  }
  if (json* o = result.is_object() && result.contains("overrides") ? &result["overrides"] : nullptr; o && o->is_array())
    for (auto& item : *o)
      if (item.is_string()) item = site::bounded(item.get<std::string>(), site::kMaxNameBytes);
}

// The same for what aggregation made of them, and for an invalid result's listing.
void bound_entry(ScoreEntry& e) {
  e.made_with = site::bounded(e.made_with, site::kMaxTextBytes);
  for (auto& note : e.notes) note = site::bounded(note, site::kMaxTextBytes);
  const std::string options = site::options_text(e.options);
  if (options.size() > site::kMaxTextBytes)
    e.options = json{{"…", "options omitted: " + std::to_string(options.size()) + " bytes, over the " +
                               std::to_string(site::kMaxTextBytes) + "-byte bound of a published cell"}};
  if (e.reference)
    for (auto& [task, names] : e.reference->differs)
      for (auto& name : names) name = site::bounded(name, site::kMaxNameBytes);
}

void bound_invalid(InvalidResult& r) {
  r.source = site::bounded(r.source, site::kMaxTextBytes);
  for (std::string* s : {&r.plugin, &r.task, &r.claimed_division}) *s = site::bounded(*s, site::kMaxNameBytes);
  for (auto& why : r.reasons) why = site::bounded(why, site::kMaxTextBytes);
}

// How far one result file was checked, before its entry is known.
struct ResultChecks {
  std::string signed_by;
  bool reevaluated = false, private_checked = false, by_author = false;
  std::string verifier, unverified;
  bool data_not_checked = false;  // closed, on LRA's release files, no trusted re-evaluation
};

// One result file as the leaderboard reads it, for entries and baselines alike:
// verified, its strings bounded, its division the verified one, its
// reevaluation.json read. `invalid` says why it must not be scored: verify
// refused it, a trusted verifier's re-evaluation failed it, or its Path-X count
// cannot be (the chance test that marks Path-X FAIL cannot take it on trust).
struct CheckedResult {
  VerifyReport report;  // report.readable false: nothing else is set
  json result;
  Reevaluation reevaluation;
  std::optional<InvalidResult> invalid;
  ResultChecks checks() const {
    const bool reevaluated = reevaluation.state == Reevaluation::State::passed;
    const json* release = json_at(result, {"task", "lra_release_files"});
    const bool release_files = release && release->is_boolean() && release->get<bool>();
    return {report.signed_by,
            reevaluated,
            reevaluation.private_checked,
            reevaluation.state == Reevaluation::State::by_author,
            reevaluation.verifier,
            reevaluation.unverified,
            report.division == "closed" && release_files && !reevaluated};
  }
};

CheckedResult check_result_file(const fs::path& file, const OfficialLookup& official,
                                const std::map<std::string, std::string>& trusted_verifiers) {
  CheckedResult c{verify_result_file(file, official), json(), Reevaluation{}, std::nullopt};
  if (!c.report.readable) return c;
  c.result = read_json_file(file, ErrorKind::data, "result.json");
  bound_result_strings(c.result);
  auto refuse = [&](std::vector<std::string> reasons, std::string failed) {
    c.invalid = InvalidResult{file.string(), string_at(c.result, "plugin", "name"), string_at(c.result, "task", "name"),
                              string_at(c.result, "division", nullptr), std::move(reasons), std::move(failed)};
    return c;
  };
  if (!c.report.valid) return refuse(c.report.reasons, "verify");
  c.reevaluation = read_reevaluation(file, c.result, trusted_verifiers);
  // A trusted verifier found that the weights do not back the number: not scored. An untrusted
  // failing report cannot do this (anyone could plant one beside another's result).
  if (c.reevaluation.state == Reevaluation::State::failed) return refuse(c.reevaluation.reasons, "re-evaluation");
  c.result["division"] = c.report.division;  // what verify established, not what the file claims
  // A trusted re-evaluation on another device than the run's recorded one
  // publishes the verifier's own accuracy: the run's word on its device buys nothing.
  if (c.reevaluation.published_accuracy) c.result["metrics"]["test_accuracy"] = *c.reevaluation.published_accuracy;
  if (string_at(c.result, "task", "name") == "pathx")
    if (auto why = pathx_count_problem(c.result)) return refuse({*why}, "verify");
  return c;
}

// An entry's checks, counted over its sources.
void count_checks(ScoreEntry& entry, std::map<std::string, ResultChecks>& checks) {
  std::set<std::string> signers, verifiers, unverified;
  for (const auto& src : entry.sources) {
    const auto& c = checks[src];
    ++entry.checks.results;
    if (!c.signed_by.empty()) {
      ++entry.checks.signed_results;
      signers.insert(c.signed_by);
    }
    entry.checks.reevaluated += c.reevaluated;
    entry.checks.private_checked += c.private_checked;
    entry.checks.data_not_checked += c.data_not_checked;
    entry.checks.reevaluated_by_author += c.by_author;
    if (c.reevaluated) verifiers.insert(c.verifier);
    if (!c.unverified.empty()) {
      ++entry.checks.reevaluation_unverified;
      unverified.insert(c.unverified);
    }
  }
  entry.checks.signers.assign(signers.begin(), signers.end());
  entry.checks.verifiers.assign(verifiers.begin(), verifiers.end());
  entry.checks.unverified_reasons.assign(unverified.begin(), unverified.end());
}

// The same file named twice (a path and its folder, a symlink) is one file.
std::string file_identity(const fs::path& file) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(file, ec);
  return ec ? file.lexically_normal().string() : canonical.string();
}

// leaderboard --baselines: the host's own measured rows of the open division.
// Unlike a submitted result, a baseline that fails a check stops the command:
// the maintainer passed it, and a reference row that cannot be trusted must not be shown.
std::vector<ScoreEntry> read_baselines(const BaselineInputs& baselines, const std::vector<fs::path>& result_files,
                                       const OfficialLookup& official,
                                       const std::map<std::string, std::string>& trusted_verifiers) {
  std::set<std::string> results;
  for (const auto& f : result_files) results.insert(file_identity(f));
  std::vector<ScoreInput> inputs;
  std::map<std::string, ResultChecks> checks;
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
    checks[file.string()] = c.checks();
    inputs.push_back({file.string(), std::move(c.result)});
  }
  std::vector<ScoreEntry> rows = aggregate_scores(inputs);
  for (auto& entry : rows) {
    const auto& builtin = baselines.builtin_mixers;
    if (std::find(builtin.begin(), builtin.end(), entry.plugin) == builtin.end())
      throw Error(ErrorKind::usage, "--baselines " + entry.sources.front() + ": plugin '" + entry.plugin +
                                        "' is not a built-in mixer of lrahost; baselines are the host's own mixers "
                                        "measured by it (pass other results as results)");
    count_checks(entry, checks);
    bound_entry(entry);
  }
  return rows;
}

}  // namespace

Leaderboard build_leaderboard(const std::vector<fs::path>& result_files, const std::vector<fs::path>& bench_files,
                              const OfficialLookup& official, const OfficialSeeds& official_seeds,
                              const std::map<std::string, std::string>& trusted_verifiers,
                              const BaselineInputs& baselines) {
  Leaderboard board;
  // Baselines first: a bad one stops the command before any work on the results.
  board.open_baselines = read_baselines(baselines, result_files, official, trusted_verifiers);
  board.result_files = result_files.size();
  std::vector<ScoreInput> valid;
  std::map<std::string, std::string> release_notes;  // closed result file -> what its release means for it
  std::map<std::string, ResultChecks> checks;  // result file -> how far it was checked
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> extra_seeds;  // (plugin, sha256) -> notes
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
    checks[file.string()] = checked.checks();
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
        extra_seeds[{string_at(result, "plugin", "name"), string_at(result, "plugin", "sha256")}].push_back(
            task + ": seed " + std::to_string(seed->get<int64_t>()) + " not averaged (not an official trial seed of " +
            (report.release ? "release " + report.release->release : std::string("its release")) + ": " +
            seed_list_text(*seeds) + ")");
        continue;
      }
    }
    valid.push_back({file.string(), std::move(result)});
  }
  for (auto& entry : aggregate_scores(valid)) {
    count_checks(entry, checks);
    if (entry.division == "closed") {
      note_missing_seeds(entry, official_seeds);
      if (const auto it = extra_seeds.find({entry.plugin, entry.plugin_sha256}); it != extra_seeds.end())
        for (const auto& note : it->second)
          if (std::find(entry.notes.begin(), entry.notes.end(), note) == entry.notes.end()) entry.notes.push_back(note);
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
        const std::string note = task + ": trained on other data than the other closed " + task +
                                 " results (task.data_fingerprint " + site_short(it->second.second) + ", most have " +
                                 site_short(common->first) + ")";
        if (std::find(entry.notes.begin(), entry.notes.end(), note) == entry.notes.end()) entry.notes.push_back(note);
      }
      for (const auto& src : entry.sources)
        if (auto it = release_notes.find(src); it != release_notes.end() &&
            std::find(entry.notes.begin(), entry.notes.end(), it->second) == entry.notes.end())
          entry.notes.push_back(it->second);
    }
    for (const auto& src : entry.sources)
      if (auto it = hint_notes.find(src);
          it != hint_notes.end() && std::find(entry.notes.begin(), entry.notes.end(), it->second) == entry.notes.end())
        entry.notes.push_back(it->second);
    bound_entry(entry);
    (entry.division != "closed"                ? board.open
     : entry.protocol == "self-pretrained" ? board.self_pretrained
                                           : board.closed)
        .push_back(entry);
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
  std::vector<std::optional<int>> ranks;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (!ranked[i].lra_average) {
      ranks.emplace_back();
    } else if (i > 0 && ranks[i - 1] && *ranked[i - 1].lra_average == *ranked[i].lra_average) {
      ranks.push_back(ranks[i - 1]);
    } else {
      ranks.emplace_back(static_cast<int>(i) + 1);
    }
  }
  return ranks;
}

}  // namespace lra::host
