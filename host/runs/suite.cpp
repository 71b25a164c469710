// runs/suite.cpp — see suite.h.
#include "runs/suite.h"

#include <chrono>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/build_info.h"
#include "common/text.h"
#include "common/atomic_file.h"
#include "common/dir_lock.h"
#include "common/ed25519.h"
#include "common/json_input.h"
#include "common/utc_time.h"
#include "leaderboard/paper_reference.h"
#include "leaderboard/scores.h"
#include "leaderboard/site_text.h"
#include "lra/abi.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "manifest/suites.h"
#include "recall/recall_report.h"
#include "plugins/reference_configuration.h"
#include "curves/learning_curves.h"
#include "plugins/loader.h"
#include "runs/child_runs.h"
#include "runs/suite_grid.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSuiteSchema = "lrahost.suite/v1";

struct PlannedRun {
  std::string task;
  int64_t seed = 0;
  fs::path out, log;
  GridPoint point;  // of the task's [grid]; empty without one
  // One of the task's [settings] ("" without any), with its --set assignments.
  std::string setting;
  std::vector<std::string> setting_sets;
};

struct SuitePlan {
  std::vector<std::string> tasks;
  std::vector<std::string> plain_tasks;  // those without a [grid] or [settings], scored over seeds
  std::vector<PlannedRun> runs;
  std::map<std::string, std::vector<int64_t>> seeds_by_task;
};

std::vector<std::string> run_arguments(const SuiteArgs& a, const PlannedRun& r, bool resume) {
  std::vector<std::string> v = {"run",    "--plugin", a.plugin, "--task",   r.task,         "--preset",
                                a.preset, "--seed",   std::to_string(r.seed), "--out", r.out.string(),
                                "--device", a.device, "--threads", std::to_string(a.threads)};
  if (a.reference) v.insert(v.end(), {"--reference", *a.reference});
  if (a.protocol != "scratch") v.insert(v.end(), {"--protocol", a.protocol});
  for (const auto& s : r.point.sets()) v.insert(v.end(), {"--set", s});
  for (const auto& s : r.setting_sets) v.insert(v.end(), {"--set", s});
  for (const auto& s : a.sets) v.insert(v.end(), {"--set", s});
  if (a.data_dir) v.insert(v.end(), {"--data-dir", *a.data_dir});
  if (a.micro_batch > 0) v.insert(v.end(), {"--micro-batch", std::to_string(a.micro_batch)});
  if (a.fp32) v.push_back("--fp32");
  if (a.sign_key) v.insert(v.end(), {"--sign-key", *a.sign_key});
  if (resume) v.push_back("--resume");
  return v;
}

// The paper's row of the same model, for orientation (official protocol only).
void paper_rows(std::ostringstream& md, const std::string& plugin, const std::vector<std::string>& tasks) {
  for (const PaperRow& row : paper_table1()) {
    if (row.plugin != plugin) continue;
    md << "| LRA paper, " << row.model << " | Table 1 |";
    for (const auto& t : tasks) {
      const auto it = row.accuracy_percent.find(t);
      char cell[32];
      std::snprintf(cell, sizeof cell, "%.2f", it != row.accuracy_percent.end() ? it->second : 0.0);
      md << " " << (it != row.accuracy_percent.end() ? cell : (t == "pathx" ? "FAIL" : "—")) << " |";
    }
    char avg[32];
    std::snprintf(avg, sizeof avg, "%.2f", row.average_percent);
    md << " " << avg << " |\n";
  }
}

std::string markdown_summary(const SuiteArgs& a, const std::vector<ScoreEntry>& scores, const json& selections,
                             const json& runs, std::vector<std::string> tasks) {
  std::ostringstream md;
  // LRA's average and the paper's row belong to the LRA suite only (a recall
  // task such as mqar has no LRA manifest, no average and no paper row).
  const SuiteDef& suite = find_suite(a.suite);
  const bool lra = suite.lra_average;
  md << "# " << text::markdown_cell(a.plugin) << ": " << (lra ? "LRA suite" : "suite " + suite.name) << " (" << a.preset
     << " preset" << (a.reference ? ", " + reference_configuration(*a.reference).label() : std::string()) << ")\n\n";
  // `tasks`: those without a grid, scored over seeds; the grids' selections follow.
  if (!tasks.empty()) {
  md << "| entry | division |";
  for (const auto& t : tasks) md << " " << t << " |";
  md << (lra ? " LRA average |" : "") << "\n|---|---|";
  for (size_t i = 0; i < tasks.size() + (lra ? 1 : 0); ++i) md << "---:|";
  md << "\n";
  for (const auto& e : scores) {
    md << "| " << text::markdown_cell(e.plugin + " " + e.plugin_version) << " | " << e.division << " |";
    for (const auto& t : tasks) md << " " << format_task_cell(e, t) << " |";
    md << (lra ? " " + format_average_cell(e) + " |" : std::string()) << "\n";
  }
  if (lra) {
    paper_rows(md, a.plugin, tasks);
    md << "\nAccuracy in %, mean ± sample standard deviation over seeds; the LRA average is over the five tasks "
          "without Path-X; Path-X is FAIL when a one-sided binomial test cannot tell its accuracy from 50% "
          "(p >= 0.05).\n";
  } else {
    md << "\nAccuracy in %, mean ± sample standard deviation over seeds (a sequence task's: the share of scored "
          "positions right; `lrahost recall` tabulates its cells and measured state sizes).\n";
  }
  }
  if (!selections.empty()) md << grid_selection_markdown(selections);
  json failed = json::array();
  for (const auto& r : runs)
    if (r["status"] == "failed") failed.push_back(r);
  if (!failed.empty()) {
    md << "\n## Failed runs (" << failed.size() << " of " << runs.size() << ")\n\n";
    for (const auto& r : failed)
      md << "- " << r["task"].get<std::string>() << ", seed " << r["seed"].get<int64_t>() << ": exit "
         << r["exit_code"].get<int>() << " — " << r["error"].get<std::string>() << " (log: " << r["log"].get<std::string>()
         << ")\n";
  }
  return md.str();
}

// --tasks, or the suite's tasks that have a manifest in the preset; a task of
// another suite is refused (its scores belong to that suite's summary).
std::vector<std::string> suite_task_list(const SuiteArgs& a) {
  const SuiteDef& suite = find_suite(a.suite);
  std::vector<std::string> members = suite.order;
  for (auto& t : suite_tasks(suite))
    if (std::find(members.begin(), members.end(), t) == members.end()) members.push_back(std::move(t));
  if (a.tasks.empty()) {
    const auto have = preset_tasks(a.preset, a.protocol);
    std::vector<std::string> tasks;
    for (const auto& t : members)
      if (std::find(have.begin(), have.end(), t) != have.end()) tasks.push_back(t);
    if (tasks.empty())
      throw Error(ErrorKind::usage, "suite " + suite.name + " has no " + a.preset + " manifests yet (its tasks: " +
                                        text::join(members) + ")");
    return tasks;
  }
  const auto tasks = checked_task_list(a.tasks, a.preset, "--tasks", a.protocol);
  for (const auto& t : tasks)
    if (std::find(members.begin(), members.end(), t) == members.end()) {
      const SuiteDef* other = suite_of_task(t);
      throw Error(ErrorKind::usage, "--tasks: '" + t + "' is not a task of suite " + suite.name + " (" +
                                        text::join(members) + ")" +
                                        (other ? "; pass --suite " + other->name : std::string()));
    }
  return tasks;
}

// recall.md and recall.svg over each model point's chosen runs, when the
// suite's grid tasks are sequence tasks (runs/suite_grid.h): what a
// researcher pastes, accuracy per cell and against the measured state.
std::vector<std::pair<std::string, std::string>> recall_files(const json& selections, const fs::path& out,
                                                              const std::string& plugin) {
  std::vector<RecallRun> runs;
  for (const auto& s : selections) {
    if (s["selected"].is_null()) continue;
    for (const auto& dir : s["selected"]["run_dirs"]) {
      std::ifstream in(out / dir.get<std::string>() / "result.json");
      if (!in) continue;
      try {
        const json result = parse_json_input(in);
        if (json_at(result, {"metrics", "scored"}) == nullptr) break;  // not a sequence task
        runs.push_back(read_recall_run(result, dir.get<std::string>() + "/result.json"));
      } catch (const std::exception&) {
        // an unreadable result is already a failed run in suite.json
      }
    }
  }
  if (runs.empty()) return {};
  return {{"recall.md", recall_markdown(runs)},
          {"recall.svg", recall_svg(runs, plugin + ": accuracy against measured state size (chosen points)")}};
}

SuitePlan plan_suite(const SuiteArgs& a, std::vector<std::string> tasks,
                     const std::optional<std::vector<int64_t>>& cli_seeds, const fs::path& out) {
  SuitePlan plan;
  plan.tasks = std::move(tasks);
  for (const auto& t : plan.tasks) {
    const Manifest m = load_preset(t, a.preset, a.protocol);
    if (m.grid.empty() && m.settings.empty()) plan.plain_tasks.push_back(t);
    const auto seeds = cli_seeds ? *cli_seeds : trial_seeds(m);
    plan.seeds_by_task[t] = seeds;
    // A swept axis is the suite's to set: a --set on it would leave every point the same run.
    for (const auto& s : a.sets)
      if (const auto eq = s.find('='); eq != std::string::npos && grid_axis(m, std::string(text::trim(s.substr(0, eq)))))
        throw Error(ErrorKind::usage, "--set " + s + ": " + std::string(text::trim(s.substr(0, eq))) +
                                          " is an axis of " + m.source + "'s [grid], which the suite sweeps; drop it "
                                          "(or run one point with `lrahost run --set`)");
    // So is a key one of its [settings] changes: the suite runs each setting.
    for (const auto& s : a.sets)
      if (const auto eq = s.find('='); eq != std::string::npos)
        for (const auto& setting : m.settings)
          for (const auto& [key, value] : setting.changes)
            if (key == text::trim(s.substr(0, eq)))
              throw Error(ErrorKind::usage, "--set " + s + ": " + key + " is changed by setting " + setting.name +
                                                " of " + m.source + "'s [settings], which the suite runs each of; "
                                                "drop it (or run one setting with `lrahost run --set`)");
    // Without settings and a grid the runs keep their folders (runs/TASK/seed-S), as before either existed.
    std::vector<std::string> settings;
    if (!m.settings.empty()) settings.push_back(kBaselineSetting);
    for (const auto& setting : m.settings) settings.push_back(setting.name);
    if (settings.empty()) settings.push_back("");
    for (const std::string& setting : settings) {
      const ProtocolSetting* ps = find_setting(m, setting);
      const std::vector<std::string> setting_sets = ps ? setting_assignments(*ps) : std::vector<std::string>{};
      for (const GridPoint& point : grid_points(m))
        for (int64_t s : seeds) {
          const std::string seed = "seed-" + std::to_string(s);
          std::string where = point.folder().empty() ? seed : point.folder() + "/" + seed;
          if (!setting.empty()) where = setting + "/" + where;
          std::string log = t + (setting.empty() ? "" : "-" + setting) + (point.folder().empty() ? "" : "-" + point.folder()) +
                            "-" + seed + ".log";
          plan.runs.push_back({t, s, out / "runs" / t / where, out / "logs" / log, point, setting, setting_sets});
        }
    }
  }
  return plan;
}

// One plugin per suite directory: an interrupted suite continued with
// another plugin would keep the first one's runs under the new name.
void claim_for_plugin(const SuiteArgs& a, const LoadedPlugin& plugin, const SuitePlan& plan, const fs::path& out) {
  const json this_plugin = {{"plugin", a.plugin},
                            {"name", plugin.descriptor.name},
                            {"file", fs::absolute(plugin.descriptor.file).string()},
                            {"sha256", plugin.sha256}};
  auto refuse_mix = [&](const std::string& where, const std::string& other) {
    throw Error(ErrorKind::usage, out.string() + " holds a suite of plugin " + other + " (" + where + "); this one is '" +
                                      plugin.descriptor.name + "' (" + this_plugin["file"].get<std::string>() +
                                      "); one suite directory holds one plugin: choose another --out");
  };
  const fs::path marker = out / "suite-plugin.json";
  if (fs::exists(marker)) {
    json stored;
    try {
      std::ifstream in(marker);
      stored = parse_json_input(in);
    } catch (const std::exception& e) {
      throw Error(ErrorKind::usage, marker.string() + " is unreadable (" + e.what() + "); choose another --out");
    }
    if (stored.value("name", "") != plugin.descriptor.name || stored.value("sha256", "") != plugin.sha256)
      refuse_mix(marker.string(), "'" + stored.value("name", "?") + "' (" + stored.value("file", "?") + ", sha256 " +
                                      stored.value("sha256", "?").substr(0, 12) + ")");
  }
  const std::string host_revision = build_info().git_revision;
  for (const auto& r : plan.runs) {  // finished runs of a suite written before the marker existed
    std::ifstream in(r.out / "result.json");
    if (!in) continue;
    std::string name, sha256, file, revision;
    try {
      const json res = parse_json_input(in);
      const auto& p = res.at("plugin");
      name = p.at("name").get<std::string>();
      sha256 = p.at("sha256").get<std::string>();
      file = p.value("file", "?");
      revision = res.at("host").value("git_revision", std::string());
    } catch (const std::exception&) {
      continue;  // an unreadable result is reported as a failed run below
    }
    if (name != plugin.descriptor.name || sha256 != plugin.sha256)
      refuse_mix((r.out / "result.json").string(), "'" + name + "' (" + file + ")");
    // A suite's runs are one submission, and a submission comes from one host
    // build (verify refuses a mix): a suite resumed by another build would
    // finish runs no one could submit together.
    if (revision != host_revision)
      throw Error(ErrorKind::usage, (r.out / "result.json").string() + " was written by lrahost " +
                                        (revision.empty() ? std::string("of an unknown build") : "build " + revision.substr(0, 12)) +
                                        ", and this is build " + host_revision.substr(0, 12) +
                                        ": a suite's runs must come from one build to be submitted together; continue "
                                        "it with the build that started it, or choose another --out");
  }
  if (!fs::exists(marker)) write_file_atomic(marker, this_plugin.dump(2) + "\n");
}

// Runs (or keeps) one planned run; its record in suite.json's "runs", its
// result appended to `results` when readable.
json run_planned(const SuiteArgs& a, const PlannedRun& r, const fs::path& out, std::vector<ScoreInput>& results) {
  std::string status = "reused";
  int code = 0;
  // A suite that was interrupted goes on where it stopped: finished runs are
  // kept, a run with checkpoints resumes from its newest one.
  if (!fs::exists(r.out / "result.json")) {
    // A self-pretrained run keeps its first phase under pretraining/.
    const bool resume = fs::exists(r.out / "checkpoints") || fs::exists(r.out / "pretraining");
    code = run_self(run_arguments(a, r, resume), r.log.string());
    status = code == 0 ? "ok" : "failed";
  }
  json point = json::object();
  for (const auto& [axis, value] : r.point.values) point[axis] = value;
  json rec = {{"task", r.task},
              {"seed", r.seed},
              {"setting", r.setting},
              {"point", point},
              {"status", status},
              {"exit_code", code},
              {"run_dir", fs::relative(r.out, out).string()},
              {"log", fs::relative(r.log, out).string()}};
  if (code == 0) {
    try {
      std::ifstream in(r.out / "result.json");
      results.push_back({(r.out / "result.json").string(), parse_json_input(in)});
      const double acc = results.back().result.at("metrics").at("test_accuracy").get<double>();
      rec["test_accuracy"] = acc;
      rec["best_val_accuracy"] = results.back().result.at("metrics").at("best_val_accuracy").get<double>();
      std::printf("%s, test accuracy %.2f%%\n", status == "reused" ? "kept from before" : "done", 100 * acc);
    } catch (const std::exception& e) {
      code = static_cast<int>(ErrorKind::data);
      rec["status"] = "failed";
      rec["exit_code"] = code;
      rec["error"] = (r.out / "result.json").string() + ": unreadable result: " + e.what();
      std::printf("FAILED (%s)\n", rec["error"].get<std::string>().c_str());
    }
  } else {
    rec["error"] = child_failure(code, r.log.string());
    std::printf("FAILED (exit %d): %s\n", code, rec["error"].get<std::string>().c_str());
  }
  return rec;
}

// "[3/12, 8 min so far, about 30 min left]" before run `done` + 1: the time
// left estimated per run this process trained (`timed`), since a resumed
// suite's kept runs take none; no estimate before one has been trained.
std::string suite_progress(std::size_t done, std::size_t total, double elapsed, std::size_t timed) {
  if (timed == 0) return "[" + std::to_string(done + 1) + "/" + std::to_string(total) + "]";
  const double left = elapsed / static_cast<double>(timed) * static_cast<double>(total - done);
  return "[" + std::to_string(done + 1) + "/" + std::to_string(total) + ", " + text::human_duration(elapsed) +
         " so far, about " + text::human_duration(left) + " left]";
}

}  // namespace

SuiteOutcome run_suite(const SuiteArgs& a) {
  const auto tasks = suite_task_list(a);
  std::optional<std::vector<int64_t>> cli_seeds;
  if (a.seeds) cli_seeds = parse_seed_list(*a.seeds, "--seeds");
  // a rejected plugin would fail every task the same way: exit 3 now
  const LoadedPlugin& plugin = open_plugin(a.plugin, LRA_KIND_MIXER);
  // A configuration that does not cover this plugin or a task: exit 2 now, not after the first runs.
  if (a.reference)
    for (const auto& task : tasks) {
      Manifest m = load_preset(task, a.preset, a.protocol);
      std::vector<std::string> ignored;
      apply_reference_configuration(*a.reference, plugin, task, m, &ignored);
    }
  check_output_dir_argument(a.out);  // empty, a file: exit 2
  if (a.sign_key) load_ed25519_private_key(*a.sign_key);  // a key that cannot sign: exit 2 before the first run
  SuiteOutcome r;
  r.out = fs::absolute(a.out);
  const fs::path& out = r.out;
  // One suite at a time in DIR (common/dir_lock.h); each run locks its own runs/TASK/seed-S/.
  const DirLock lock(out);
  if (fs::exists(out / "suite.json") && !a.retry_failed)
    throw Error(ErrorKind::usage, (out / "suite.json").string() +
                                      " exists: this suite is finished; choose another --out, or add --retry-failed "
                                      "to run its failed runs again (a suite interrupted before its summary continues "
                                      "where it stopped when run again)");
  const SuitePlan plan = plan_suite(a, tasks, cli_seeds, out);
  claim_for_plugin(a, plugin, plan, out);

  const std::string started_at = utc_now();
  std::printf("suite: %s on %zu tasks, %zu runs (%s preset) in %s\n", a.plugin.c_str(), tasks.size(), plan.runs.size(),
              a.preset.c_str(), out.c_str());
  json runs = json::array();
  std::vector<ScoreInput> results;
  const auto suite_start = std::chrono::steady_clock::now();
  std::size_t timed = 0;  // runs trained by this suite process (kept ones take no time)
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    const PlannedRun& pr = plan.runs[i];
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - suite_start).count();
    std::printf("  %s %s%s, seed %lld: ", suite_progress(i, plan.runs.size(), elapsed, timed).c_str(), pr.task.c_str(),
                pr.point.values.empty() ? "" : (" " + text::join(pr.point.sets(), " ")).c_str(),
                static_cast<long long>(pr.seed));
    std::fflush(stdout);
    json rec = run_planned(a, pr, out, results);
    if (rec.value("status", std::string()) != "reused") ++timed;
    const int code = rec["exit_code"].get<int>();
    if (code != 0 && r.first_failure == 0) r.first_failure = code;
    runs.push_back(std::move(rec));
  }

  // A grid task's runs are different models and settings: the selection
  // reports them (runs/suite_grid.h); the scores table is the other tasks'.
  const std::vector<std::string>& plain_tasks = plan.plain_tasks;
  std::vector<ScoreInput> plain;
  for (auto& in : results)
    if (std::find(plain_tasks.begin(), plain_tasks.end(), in.result.at("task").at("name").get<std::string>()) !=
        plain_tasks.end())
      plain.push_back(in);
  const auto scores = aggregate_scores(plain);
  // The grids' and settings' runs; the plain tasks' are scored above.
  json grid_runs = json::array();
  for (const auto& rec : runs)
    if (std::find(plain_tasks.begin(), plain_tasks.end(), rec["task"].get<std::string>()) == plain_tasks.end())
      grid_runs.push_back(rec);
  const json selections = select_grid_points(grid_runs);
  json score_json = json::array();
  for (const auto& e : scores) score_json.push_back(to_json(e));
  const json summary = {{"schema", kSuiteSchema},   {"plugin", a.plugin},   {"preset", a.preset}, {"protocol", a.protocol},
                        {"tasks", tasks},           {"seeds", plan.seeds_by_task}, {"sets", a.sets},
                        {"reference", a.reference ? json(*a.reference) : json(nullptr)},
                        {"suite", a.suite},
                        {"runs", runs},             {"scores", score_json}, {"grid_selections", selections},
                        {"task_scores", task_scores(selections)},
                        {"started_at", started_at},
                        {"finished_at", utc_now()}};
  r.markdown = markdown_summary(a, scores, selections, runs, plain_tasks);
  // Every finished run's learning curves on one page.
  std::vector<LearningCurve> curves;
  for (const auto& in : results) curves.push_back(learning_curve(in.result, in.source));
  // All or none; suite.json renamed last: its presence marks a finished suite.
  auto files = recall_files(selections, out, a.plugin);
  files.insert(files.begin(), {"curves.svg", curves_svg(curves, a.plugin + ": learning curves of the suite")});
  files.push_back({"suite.md", r.markdown});
  files.push_back({"suite.json", summary.dump(2) + "\n"});
  write_files_atomic(out, files);
  return r;
}

}  // namespace lra::host
