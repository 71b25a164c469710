#include "leaderboard/board.h"
#include "common/json_input.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "bench/bench_report.h"
#include "lra/status.h"
#include "reevaluation/reevaluate.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json parse_file(const fs::path& file, ErrorKind kind, const std::string& what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(kind, file.string() + ": cannot read this " + what);
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return parse_json_input(text.str());
  } catch (const JsonInputError& e) {
    throw Error(kind, file.string() + ": not valid JSON (" + e.what() + "); is it a " + what + "?");
  }
}

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
    const json doc = parse_file(f, ErrorKind::usage, "bench.json (written by lrahost bench)");
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

// What a reevaluation.json beside a result says about it (reevaluation/reevaluate.h).
struct Reevaluation {
  bool present = false, valid = false, private_checked = false;
  std::vector<std::string> reasons;
};

Reevaluation read_reevaluation(const fs::path& result_file, const json& result) {
  Reevaluation r;
  const fs::path file = result_file.parent_path() / kReevaluationFileName;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return r;
  r.present = true;
  json doc;
  try {
    doc = parse_file(file, ErrorKind::data, "reevaluation.json");
  } catch (const Error& e) {
    r.reasons.push_back(e.what());
    return r;
  }
  if (!doc.is_object() || doc.value("schema", json()) != kReevaluationSchema) {
    r.reasons.push_back(file.string() + " is not a reevaluation.json written by lrahost verify --reevaluate");
    return r;
  }
  // Bound to the result: a report copied beside another result says nothing about it.
  if (doc.value("result_digest", json()) != result.value("digest", json())) {
    r.reasons.push_back(file.string() + " re-evaluated another result (result_digest " +
                        doc.value("result_digest", json()).dump() + ", this result's digest " +
                        result.value("digest", json()).dump() + ")");
    return r;
  }
  r.valid = doc.value("valid", false) == true;
  if (!r.valid) {
    const json reasons = doc.value("reasons", json::array());
    for (const auto& why : reasons)
      if (why.is_string()) r.reasons.push_back("re-evaluation: " + why.get<std::string>());
    if (r.reasons.empty()) r.reasons.push_back("re-evaluation failed (" + file.string() + ")");
    return r;
  }
  const json priv = doc.value("private", json());
  r.private_checked = priv.is_object() && priv.value("flagged", true) == false;
  return r;
}

}  // namespace

Leaderboard build_leaderboard(const std::vector<fs::path>& result_files, const std::vector<fs::path>& bench_files,
                              const OfficialLookup& official, const OfficialSeeds& official_seeds) {
  Leaderboard board;
  board.result_files = result_files.size();
  std::vector<ScoreInput> valid;
  std::map<std::string, std::string> release_notes;  // closed result file -> what its release means for it
  struct ResultChecks {
    std::string signed_by;
    bool reevaluated = false, private_checked = false;
  };
  std::map<std::string, ResultChecks> checks;  // result file -> how far it was checked
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> extra_seeds;  // (plugin, sha256) -> notes
  // Closed results of one task and manifest should all have trained on the
  // same data; downloaded data cannot be checked by verify, so disagreement
  // is flagged here: result file -> (task + manifest, fingerprint).
  std::map<std::string, std::pair<std::string, std::string>> data_used;
  std::map<std::string, std::map<std::string, int>> fingerprint_counts;
  for (const auto& file : result_files) {
    const VerifyReport report = verify_result_file(file, official);
    if (!report.readable) {
      const std::string why = report.reasons.empty() ? "cannot read it" : report.reasons.front();
      throw Error(ErrorKind::data, file.string() + ": " + why + " (pass result.json files written by lrahost run)");
    }
    json result = parse_file(file, ErrorKind::data, "result.json");
    if (!report.valid) {
      board.invalid.push_back({file.string(), string_at(result, "plugin", "name"), string_at(result, "task", "name"),
                               string_at(result, "division", nullptr), report.reasons});
      continue;
    }
    const Reevaluation reevaluation = read_reevaluation(file, result);
    if (reevaluation.present && !reevaluation.valid) {
      // The weights do not back the number (or the report is not this result's): not scored.
      board.invalid.push_back({file.string(), string_at(result, "plugin", "name"), string_at(result, "task", "name"),
                               string_at(result, "division", nullptr), reevaluation.reasons});
      continue;
    }
    checks[file.string()] = {report.signed_by, reevaluation.valid, reevaluation.private_checked};
    if (report.division == "closed") {
      const json* fp = json_at(result, {"task", "data_fingerprint"});
      const std::string key = string_at(result, "task", "name") + " " + string_at(result, "task", "manifest_sha256");
      data_used[file.string()] = {key, fp ? (fp->is_string() ? fp->get<std::string>() : fp->dump()) : ""};
      ++fingerprint_counts[key][data_used[file.string()].second];
    }
    result["division"] = report.division;  // what verify established, not what the file claims
    if (report.release) {
      // The release comes from the manifest hash; older or annotated ones are said next to the score.
      const OfficialManifest& r = *report.release;
      std::string note;
      if (!r.superseded_by.empty()) note = "release " + r.release + " (superseded by " + r.superseded_by + ")";
      if (!r.note.empty()) note += (note.empty() ? "release " + r.release + ": " : ": ") + r.note;
      if (!note.empty()) release_notes[file.string()] = string_at(result, "task", "name") + ": " + note;
    }
    // Path-X's FAIL mark pools correct counts over task.examples.test: a count
    // the result's own data cannot have is refused, with the reason shown.
    if (string_at(result, "task", "name") == "pathx")
      if (auto why = pathx_count_problem(result)) {
        board.invalid.push_back({file.string(), string_at(result, "plugin", "name"), "pathx",
                                 string_at(result, "division", nullptr), {*why}});
        continue;
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
    std::set<std::string> signers;
    for (const auto& src : entry.sources) {
      const auto& c = checks[src];
      ++entry.checks.results;
      if (!c.signed_by.empty()) {
        ++entry.checks.signed_results;
        signers.insert(c.signed_by);
      }
      entry.checks.reevaluated += c.reevaluated;
      entry.checks.private_checked += c.private_checked;
    }
    entry.checks.signers.assign(signers.begin(), signers.end());
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
    (entry.division == "closed" ? board.closed : board.open).push_back(entry);
  }

  board.task_columns = lra_task_order();
  std::set<std::string> extra;
  for (const auto* division : {&board.closed, &board.open})
    for (const auto& e : *division)
      for (const auto& [task, score] : e.tasks)
        if (std::find(board.task_columns.begin(), board.task_columns.end(), task) == board.task_columns.end())
          extra.insert(task);
  board.task_columns.insert(board.task_columns.end(), extra.begin(), extra.end());

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
