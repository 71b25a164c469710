#include "leaderboard/suite_sections.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "common/json_input.h"
#include "common/text.h"
#include "leaderboard/site_text.h"
#include "lra/status.h"
#include "manifest/manifest.h"
#include "manifest/presets.h"
#include "runs/suite_grid.h"

namespace lra::host {
namespace {

using nlohmann::json;
using Point = std::vector<std::pair<std::string, std::string>>;  // (axis, value as --set writes it)


// The result's grid point: each axis of config.grid ("model.d_model") with
// the value its config holds there (config.model.d_model).
Point grid_point_of(const ScoreInput& in) {
  Point out;
  const json* grid = json_at(in.result, {"config", "grid"});
  if (!grid || grid->is_null()) return out;
  if (!grid->is_object())
    throw Error(ErrorKind::data, in.source + ": config.grid is not an object (expected a result.json written by lrahost run)");
  for (const auto& [axis, values] : grid->items()) {
    const auto dot = axis.find('.');
    const std::string section = axis.substr(0, dot), key = dot == std::string::npos ? "" : axis.substr(dot + 1);
    const json* v = key.empty() ? nullptr : json_at(in.result, {"config", section.c_str(), key.c_str()});
    if (!v || !v->is_number() || !std::isfinite(v->get<double>()))
      throw Error(ErrorKind::data, in.source + ": config." + site::bounded(axis, site::kMaxNameBytes) +
                                       " is not a number, but config.grid lists it as an axis (expected a result.json "
                                       "written by lrahost run; check with lrahost verify)");
    out.emplace_back(site::bounded(axis, site::kMaxNameBytes), grid_value_text(v->get<double>()));
  }
  return out;
}

// How many settings the task's official manifest has (its baseline and each
// of its [settings]); 1 for a task without one.
int official_settings(const std::string& task) {
  try {
    return 1 + static_cast<int>(load_preset(task, "official").settings.size());
  } catch (const Error&) {
    return 1;
  }
}

// One result inside an entry.
struct Run {
  std::string task, setting, source, digest;
  int64_t seed = 0;
  Point point;
  const json* result = nullptr;
};

struct Group {
  SuiteEntry suite_entry;
  std::vector<Run> runs;
};

std::string point_text(const Point& p) {
  std::vector<std::string> parts;
  for (const auto& [axis, value] : p) parts.push_back(axis + "=" + value);
  return parts.empty() ? "no grid point" : text::join(parts, " ");
}

// select_grid_points' input: one record per result.
json run_records(const std::vector<Run>& runs) {
  json records = json::array();
  for (const Run& r : runs) {
    json point = json::object();
    for (const auto& [axis, value] : r.point) point[axis] = value;
    json rec = {{"task", r.task}, {"setting", r.setting}, {"point", point}, {"run_dir", r.source}};
    // Without a usable validation accuracy the run is an unfinished candidate: never chosen.
    const json* val = json_at(*r.result, {"metrics", "best_val_accuracy"});
    if (val && val->is_number() && std::isfinite(val->get<double>())) {
      rec["best_val_accuracy"] = val->get<double>();
      rec["test_accuracy"] = (*r.result)["metrics"]["test_accuracy"].get<double>();  // checked by entry_result
    }
    records.push_back(std::move(rec));
  }
  return records;
}

// The measured state of the chosen runs: the longest length any measured,
// the most bytes there; or why not.
void read_state(SuiteTaskScore& t, const std::vector<const Run*>& chosen) {
  int measured = 0;
  std::string why;
  for (const Run* r : chosen) {
    const json* state = json_at(*r->result, {"state_size"});
    const json* flag = state ? json_at(*state, {"measured"}) : nullptr;
    const json* lengths = state ? json_at(*state, {"per_length"}) : nullptr;
    bool any = false;
    if (flag && flag->is_boolean() && flag->get<bool>() && lengths && lengths->is_array())
      for (const auto& p : *lengths) {
        const json* length = json_at(p, {"length"});
        const json* bytes = json_at(p, {"bytes"});
        if (!length || !bytes || !length->is_number_integer() || !bytes->is_number_integer()) continue;
        any = true;
        const auto at = std::make_pair(length->get<int64_t>(), bytes->get<int64_t>());
        if (!t.state_length || at > std::make_pair(*t.state_length, *t.state_bytes))
          t.state_length = at.first, t.state_bytes = at.second;
      }
    if (any) ++measured;
    else if (const json* w = state ? json_at(*state, {"why"}) : nullptr; w && w->is_string() && why.empty())
      why = w->get<std::string>();
  }
  if (measured == 0)
    t.state_note = "not measured" + (why.empty() ? std::string() : ": " + why);
  else if (measured < static_cast<int>(chosen.size()))
    t.state_note = "measured in " + std::to_string(measured) + " of " + std::to_string(chosen.size()) + " chosen runs";
  t.state_note = site::bounded(t.state_note, site::kMaxTextBytes);
}

// Per task: the choice on validation and the mean over settings (runs/suite_grid.h), the chosen runs' facts.
void score_group(Group& g, const std::vector<std::string>& suite_tasks) {
  SuiteEntry& se = g.suite_entry;
  std::map<std::string, const Run*> by_source;
  bool train_axis = false;
  for (const Run& r : g.runs) {
    by_source[r.source] = &r;
    for (const auto& [axis, value] : r.point) train_axis = train_axis || axis.rfind("model.", 0) != 0;
  }
  const json selections = select_grid_points(run_records(g.runs));
  for (const auto& s : task_scores(selections)) {
    const std::string task = s["task"].get<std::string>();
    SuiteTaskScore& t = se.tasks[task];
    t.settings = s["settings"].get<int>();
    if (!s["score"].is_null()) t.score = s["score"].get<double>();
    else t.no_score = "a setting without a finished run";
    // A closed task's score is the protocol's: the mean over all its official
    // settings (MAD's), not over those a submission happened to run.
    if (se.entry.division == "closed") {
      const int official = official_settings(task);
      if (t.settings < official) {
        t.score.reset();
        t.no_score = std::to_string(t.settings) + " of its " + std::to_string(official) + " official settings";
        se.entry.notes.push_back(site::bounded(task + ": " + std::to_string(t.settings) + " of its " +
                                                   std::to_string(official) + " official settings (no score: a "
                                                   "closed task's score is the mean over all of them)",
                                               site::kMaxTextBytes));
      }
    }
  }
  std::map<std::string, std::vector<std::string>> chosen;  // task -> "setting: lr 0.01"
  std::map<std::string, std::vector<const Run*>> chosen_runs;
  for (const auto& s : selections) {
    const std::string task = s["task"].get<std::string>(), setting = s["setting"].get<std::string>();
    if (s["selected"].is_null()) continue;
    const json& picked = s["selected"];
    if (train_axis)
      chosen[task].push_back((setting.empty() ? std::string() : setting + ": ") + picked["train"].get<std::string>());
    for (const auto& dir : picked["run_dirs"]) chosen_runs[task].push_back(by_source.at(dir.get<std::string>()));
  }
  for (auto& [task, t] : se.tasks) {
    t.chosen = site::bounded(text::join(chosen[task], "; "), site::kMaxTextBytes);
    std::set<int64_t> seeds;
    for (const Run* r : chosen_runs[task]) {
      seeds.insert(r->seed);
      t.chosen_sources.push_back(r->source);
    }
    t.seeds.assign(seeds.begin(), seeds.end());
    read_state(t, chosen_runs[task]);
  }
  double sum = 0;
  bool all = !suite_tasks.empty();
  for (const auto& task : suite_tasks) {
    const auto it = se.tasks.find(task);
    all = all && it != se.tasks.end() && it->second.score;
    if (all) sum += *it->second.score;
  }
  if (all) se.score = sum / static_cast<double>(suite_tasks.size());
}

}  // namespace

std::vector<std::string> suite_task_columns(const SuiteDef& suite) {
  std::vector<std::string> tasks = suite_tasks(suite);
  for (const auto& t : suite.order)
    if (std::find(tasks.begin(), tasks.end(), t) == tasks.end()) tasks.push_back(t);
  auto rank = [&](const std::string& t) { return std::find(suite.order.begin(), suite.order.end(), t) - suite.order.begin(); };
  std::stable_sort(tasks.begin(), tasks.end(), [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  return tasks;
}

std::vector<SuiteEntry> aggregate_suite_entries(const SuiteDef& suite, const std::vector<ScoreInput>& results) {
  std::vector<Group> groups;  // in the order their first result came
  std::map<std::vector<std::string>, std::size_t> index;
  for (const ScoreInput& in : results) {
    EntryResult r = entry_result(in);
    Run run{r.task, "", in.source, r.digest, r.seed, grid_point_of(in), &in.result};
    if (const json* setting = json_at(in.result, {"config", "setting"}); setting && setting->is_string())
      run.setting = site::bounded(setting->get<std::string>(), site::kMaxNameBytes);
    const std::string model = site::bounded(GridPoint{run.point}.model_label(), site::kMaxNameBytes);
    std::vector<std::string> key = r.key;
    key.push_back(model);
    const auto [it, fresh] = index.emplace(key, groups.size());
    if (fresh) {
      groups.push_back({SuiteEntry{r.entry, model, {}, std::nullopt}, {}});
    } else {
      Group& g = groups[it->second];
      bool duplicate = false;
      for (const Run& other : g.runs) {
        if (other.task != run.task || other.setting != run.setting || other.point != run.point || other.seed != run.seed)
          continue;
        // The same file reached twice (a copy) counts once; two different runs of one seed and point are ambiguous.
        if (!run.digest.empty() && other.digest == run.digest) {
          duplicate = true;
          break;
        }
        throw Error(ErrorKind::data, in.source + " and " + other.source + " are both seed " + std::to_string(run.seed) +
                                         " of " + r.entry.plugin + " on " + run.task +
                                         (run.setting.empty() ? "" : " setting " + run.setting) + " at " +
                                         point_text(run.point) + " (" + r.entry.division +
                                         " division, same plugin build and options); pass only one of them");
      }
      if (duplicate) continue;
      add_entry_result(g.suite_entry.entry, r.entry);
    }
    groups[index.at(key)].runs.push_back(std::move(run));
  }
  const std::vector<std::string> tasks = suite_task_columns(suite);
  std::vector<SuiteEntry> out;
  for (Group& g : groups) {
    // LRA's reference settings say nothing about a suite whose tasks their table has no entry for: no marker.
    if (auto& ref = g.suite_entry.entry.reference;
        ref && !ref->used &&
        std::all_of(ref->differs.begin(), ref->differs.end(), [](const auto& d) {
          return d.second == std::vector<std::string>{kNoReferenceEntry};
        }))
      ref.reset();
    score_group(g, tasks);
    out.push_back(std::move(g.suite_entry));
  }
  // Best score first; entries without one last; then by plugin, keeping the order results came in.
  std::stable_sort(out.begin(), out.end(), [](const SuiteEntry& a, const SuiteEntry& b) {
    if (a.score.has_value() != b.score.has_value()) return a.score.has_value();
    if (a.score && *a.score != *b.score) return *a.score > *b.score;
    return a.entry.plugin < b.entry.plugin;
  });
  return out;
}

std::vector<std::optional<int>> suite_ranks(const std::vector<SuiteEntry>& ranked) {
  std::vector<std::optional<double>> scores;
  for (const auto& e : ranked) scores.push_back(e.score);
  return competition_ranks(scores);
}

std::string suite_score_cell(const std::optional<double>& score) {
  return score ? site::percent_text(100 * *score) : "—";
}

std::string suite_state_text(const SuiteTaskScore& t) {
  if (!t.state_bytes) return t.state_note.empty() ? "not measured" : t.state_note;
  return text::bytes_text(*t.state_bytes) + " at length " + std::to_string(*t.state_length) +
         (t.state_note.empty() ? "" : " (" + t.state_note + ")");
}

json to_json(const SuiteEntry& e) {
  json out = to_json(e.entry);
  out.erase("lra_average");
  json tasks = json::object();
  for (const auto& [task, t] : e.tasks)
    tasks[task] = {{"score", t.score ? json(*t.score) : json(nullptr)},
                   {"settings", t.settings},
                   {"seeds", t.seeds.size()},
                   {"chosen", t.chosen},
                   {"state_bytes", t.state_bytes ? json(*t.state_bytes) : json(nullptr)},
                   {"state_length", t.state_length ? json(*t.state_length) : json(nullptr)},
                   {"state_note", t.state_note},
                   {"no_score", t.no_score},
                   {"chosen_sources", t.chosen_sources}};
  out["tasks"] = tasks;
  out["model"] = e.model;
  out["score"] = e.score ? json(*e.score) : json(nullptr);
  return out;
}

}  // namespace lra::host
