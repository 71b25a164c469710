// `lrahost suite`: one plugin on every task and trial seed, each an
// `lrahost run` in its own process (a failing task is recorded and the rest
// go on), then a summary with accuracy mean ± std per task and the LRA
// average, scored exactly as the leaderboard scores them.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "runs/child_runs.h"
#include "common/ed25519.h"
#include "common/json_input.h"
#include "common/text.h"
#include "cli/commands.h"
#include "leaderboard/paper_reference.h"
#include "common/utc_time.h"
#include "common/atomic_file.h"
#include "common/dir_lock.h"
#include "leaderboard/scores.h"
#include "leaderboard/site_text.h"
#include "lra/abi.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "plugins/loader.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSuiteSchema = "lrahost.suite/v1";

struct PlannedRun {
  std::string task;
  int64_t seed = 0;
  fs::path out, log;
};

std::vector<std::string> run_arguments(const SuiteArgs& a, const PlannedRun& r, bool resume) {
  std::vector<std::string> v = {"run",    "--plugin", a.plugin, "--task",   r.task,         "--preset",
                                a.preset, "--seed",   std::to_string(r.seed), "--out", r.out.string(),
                                "--device", a.device, "--threads", std::to_string(a.threads)};
  for (const auto& s : a.sets) v.insert(v.end(), {"--set", s});
  if (a.data_dir) v.insert(v.end(), {"--data-dir", *a.data_dir});
  if (a.micro_batch > 0) v.insert(v.end(), {"--micro-batch", std::to_string(a.micro_batch)});
  if (a.fp32) v.push_back("--fp32");
  if (a.sign_key) v.insert(v.end(), {"--sign-key", *a.sign_key});
  if (resume) v.push_back("--resume");
  return v;
}

std::string markdown_summary(const SuiteArgs& a, const std::vector<ScoreEntry>& scores, const json& runs,
                             const std::vector<std::string>& tasks) {
  std::ostringstream md;
  md << "# " << text::markdown_cell(a.plugin) << ": LRA suite (" << a.preset << " preset)\n\n";
  md << "| entry | division |";
  for (const auto& t : tasks) md << " " << t << " |";
  md << " LRA average |\n|---|---|";
  for (size_t i = 0; i <= tasks.size(); ++i) md << "---:|";
  md << "\n";
  for (const auto& e : scores) {
    md << "| " << text::markdown_cell(e.plugin + " " + e.plugin_version) << " | " << e.division << " |";
    for (const auto& t : tasks) md << " " << format_task_cell(e, t) << " |";
    md << " " << format_average_cell(e) << " |\n";
  }
  // The paper's row of the same model, for orientation (official protocol only).
  for (const PaperRow& row : paper_table1()) {
    if (row.plugin != a.plugin) continue;
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
  md << "\nAccuracy in %, mean ± sample standard deviation over seeds; the LRA average is over the five tasks "
        "without Path-X; Path-X is FAIL when a one-sided binomial test cannot tell its accuracy from 50% "
        "(p >= 0.05).\n";
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

}  // namespace

int suite_command(const SuiteArgs& a) {
  // Everything that can be refused is refused before the first run starts.
  const auto tasks = split_list(a.tasks, "--tasks");
  const auto known = preset_tasks(a.preset);
  for (const auto& t : tasks)
    if (std::find(known.begin(), known.end(), t) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw Error(ErrorKind::usage, "--tasks: '" + t + "' has no " + a.preset + " manifest (tasks: " + list + ")");
    }
  std::optional<std::vector<int64_t>> cli_seeds;
  if (a.seeds) cli_seeds = parse_seed_list(*a.seeds, "--seeds");
  // a rejected plugin would fail every task the same way: exit 3 now
  const LoadedPlugin& plugin = open_plugin(a.plugin, LRA_KIND_MIXER);
  check_output_dir_argument(a.out);  // empty, a file: exit 2
  if (a.sign_key) load_ed25519_private_key(*a.sign_key);  // a key that cannot sign: exit 2 before the first run
  const fs::path out = fs::absolute(a.out);
  // One suite at a time in DIR (common/dir_lock.h); each run locks its own runs/TASK/seed-S/.
  const DirLock lock(out);
  if (fs::exists(out / "suite.json"))
    throw Error(ErrorKind::usage, (out / "suite.json").string() +
                                      " exists: this suite is finished; choose another --out (a suite interrupted "
                                      "before its summary continues where it stopped when run again)");

  std::vector<PlannedRun> plan;
  std::map<std::string, std::vector<int64_t>> seeds_by_task;
  for (const auto& t : tasks) {
    const auto seeds = cli_seeds ? *cli_seeds : trial_seeds(load_preset(t, a.preset));
    seeds_by_task[t] = seeds;
    for (int64_t s : seeds)
      plan.push_back({t, s, out / "runs" / t / ("seed-" + std::to_string(s)),
                      out / "logs" / (t + "-seed-" + std::to_string(s) + ".log")});
  }
  // One plugin per suite directory: an interrupted suite continued with
  // another plugin would keep the first one's runs under the new name.
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
  for (const auto& r : plan) {  // finished runs of a suite written before the marker existed
    std::ifstream in(r.out / "result.json");
    if (!in) continue;
    std::string name, sha256, file;
    try {
      const json res = parse_json_input(in);
      const auto& p = res.at("plugin");
      name = p.at("name").get<std::string>();
      sha256 = p.at("sha256").get<std::string>();
      file = p.value("file", "?");
    } catch (const std::exception&) {
      continue;  // an unreadable result is reported as a failed run below
    }
    if (name != plugin.descriptor.name || sha256 != plugin.sha256)
      refuse_mix((r.out / "result.json").string(), "'" + name + "' (" + file + ")");
  }
  if (!fs::exists(marker)) write_file_atomic(marker, this_plugin.dump(2) + "\n");

  const std::string started_at = utc_now();
  std::printf("suite: %s on %zu tasks, %zu runs (%s preset) in %s\n", a.plugin.c_str(), tasks.size(), plan.size(),
              a.preset.c_str(), out.c_str());

  json runs = json::array();
  std::vector<ScoreInput> results;
  int first_failure = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const PlannedRun& r = plan[i];
    std::printf("  [%zu/%zu] %s, seed %lld: ", i + 1, plan.size(), r.task.c_str(), static_cast<long long>(r.seed));
    std::fflush(stdout);
    std::string status = "reused";
    int code = 0;
    // A suite that was interrupted goes on where it stopped: finished runs are
    // kept, a run with checkpoints resumes from its newest one.
    if (!fs::exists(r.out / "result.json")) {
      const bool resume = fs::exists(r.out / "checkpoints");
      code = run_self(run_arguments(a, r, resume), r.log.string());
      status = code == 0 ? "ok" : "failed";
    }
    json rec = {{"task", r.task},
                {"seed", r.seed},
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
    if (code != 0 && first_failure == 0) first_failure = code;
    runs.push_back(rec);
  }

  const auto scores = aggregate_scores(results);
  json score_json = json::array();
  for (const auto& e : scores) score_json.push_back(to_json(e));
  const json summary = {{"schema", kSuiteSchema},
                        {"plugin", a.plugin},
                        {"preset", a.preset},
                        {"tasks", tasks},
                        {"seeds", seeds_by_task},
                        {"sets", a.sets},
                        {"runs", runs},
                        {"scores", score_json},
                        {"started_at", started_at},
                        {"finished_at", utc_now()}};
  const std::string md = markdown_summary(a, scores, runs, tasks);
  // Both or neither; suite.json renamed last: its presence marks a finished suite.
  write_files_atomic(out, {{"suite.md", md}, {"suite.json", summary.dump(2) + "\n"}});
  std::printf("\n%s\nwritten: %s, %s\n", md.c_str(), (out / "suite.json").c_str(), (out / "suite.md").c_str());
  return first_failure;
}

void add_suite_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<SuiteArgs>();
  auto* st = app.add_subcommand("suite", "Run a plugin on every LRA task and seed; summarise accuracy (mean +- std) "
                                         "and the LRA average, continuing past a failing task");
  st->add_option("--plugin", a->plugin, "Mixer plugin: built-in NAME or PATH to a .so")->required();
  st->add_option("--out", a->out, "Suite directory (runs/<task>/seed-<S>/, suite.json, suite.md)")->required();
  st->add_option("--tasks", a->tasks, "Comma-separated tasks (default: all six)");
  st->add_option("--seeds", a->seeds, "Comma-separated trial seeds (default: each manifest's rules.seeds)");
  add_preset_option(st, a->preset, "official (closed division) or smoke");
  st->add_option("--set", a->sets, "KEY=VALUE passed to every run");
  st->add_option("--data-dir", a->data_dir, "Data root for every run");
  add_device_option(st, a->device);
  add_threads_option(st, a->threads);
  st->add_option("--micro-batch", a->micro_batch, "Examples per forward pass (see run)")->check(CLI::NonNegativeNumber);
  add_fp32_flag(st, a->fp32);
  st->add_option("--sign-key", a->sign_key, "Ed25519 private key (PEM): sign every run's result.json");
  on_parsed(st, slot, a, [](SuiteArgs& args) { return suite_command(args); });
}

}  // namespace lra::host
