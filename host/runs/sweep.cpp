// runs/sweep.cpp — see sweep.h.
#include "runs/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/text.h"
#include "common/atomic_file.h"
#include "common/dir_lock.h"
#include "common/json_input.h"
#include "common/utc_time.h"
#include "leaderboard/scores.h"
#include "leaderboard/site_text.h"
#include "lra/status.h"
#include "runs/child_runs.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSweepSchema = "lrahost.sweep/v1";

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

json read_plan(const fs::path& dir) {
  std::ifstream in(dir / "sweep.json");
  if (!in) throw Error(ErrorKind::usage, (dir / "sweep.json").string() + ": no sweep plan here (make one with lrahost sweep --plugins ... --out DIR)");
  try {
    json j = parse_json_input(in);
    if (j.value("schema", "") != kSweepSchema) throw std::runtime_error("schema is not " + std::string(kSweepSchema));
    return j;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::usage, (dir / "sweep.json").string() + ": " + e.what());
  }
}

// The `lrahost run` arguments of one entry.
std::vector<std::string> run_args(const json& plan, const json& entry) {
  std::vector<std::string> a = {"run",    "--plugin", entry["plugin"], "--task", entry["task"], "--seed",
                                std::to_string(entry["seed"].get<int64_t>()), "--out", entry["out"],
                                "--preset", plan["preset"]};
  for (const auto& s : plan["sets"]) a.insert(a.end(), {"--set", s.get<std::string>()});
  if (plan.contains("data_dir") && !plan["data_dir"].is_null()) a.insert(a.end(), {"--data-dir", plan["data_dir"]});
  return a;
}

// Each plugin its own run folders: two files with one stem (transformer and
// /x/transformer.so) get "-2", "-3", ... in the order given.
std::map<std::string, std::string> run_names(const std::vector<std::string>& plugins) {
  std::map<std::string, std::string> run_name;  // plugin -> name in run folders
  std::map<std::string, int> stems;
  for (const auto& p : plugins) {
    if (run_name.count(p)) throw Error(ErrorKind::usage, "--plugins: '" + p + "' appears twice");
    const std::string stem = fs::path(p).stem().string();
    const int n = ++stems[stem];
    run_name[p] = n == 1 ? stem : stem + "-" + std::to_string(n);
  }
  return run_name;
}

[[noreturn]] void refuse_existing_plan(const fs::path& out, const std::vector<std::string>& plugins) {
  std::string before;
  try {
    const json plan = read_plan(out);  // kept alive: a range-for over read_plan(out)["entries"] dangles
    for (const auto& e : plan["entries"]) {
      const std::string p = e["plugin"];
      if (before.find("'" + p + "'") == std::string::npos) before += (before.empty() ? "'" : ", '") + p + "'";
    }
  } catch (const std::exception&) {
  }
  std::string now;
  for (const auto& p : plugins) now += (now.empty() ? "'" : ", '") + p + "'";
  throw Error(ErrorKind::usage, out.string() + " already holds a sweep.json" +
                                    (before.empty() ? std::string() : " (plugins " + before + ")") + "; this sweep is " +
                                    now + "; choose another --out or --collect it");
}

// Here, one after another; each run is its own process, so one failure is recorded and the rest go on.
int run_locally(const fs::path& out, const json& entries) {
  int failed = 0, first_failure = 0;
  for (const auto& e : entries) {
    const std::string index = std::to_string(e["index"].get<int64_t>());
    const int code = run_self({"sweep", "--run-index", index, out.string()},
                              (out / "logs" / ("local_" + index + ".out")).string());
    const std::string log = (out / "logs" / ("local_" + index + ".out")).string();
    std::printf("  [%lld] %s on %s, seed %lld: %s\n", static_cast<long long>(e["index"].get<int64_t>()),
                e["plugin"].get<std::string>().c_str(), e["task"].get<std::string>().c_str(),
                static_cast<long long>(e["seed"].get<int64_t>()),
                code == 0 ? "done" : ("FAILED (exit " + std::to_string(code) + "): " + child_failure(code, log)).c_str());
    failed += code != 0;
    if (code != 0 && first_failure == 0) first_failure = code;
  }
  std::printf("sweep: %d of %zu runs failed; gather with lrahost sweep --collect %s\n", failed, entries.size(), out.c_str());
  return first_failure;  // as suite: 0 when every run succeeded, else the first failed run's exit code
}

// One Slurm job array: array task i runs entry i.
std::string slurm_script(const SweepArgs& a, const fs::path& out, size_t entries) {
  std::ostringstream sb;
  sb << "#!/bin/bash\n"
     << "#SBATCH --job-name=" << a.job_name << "\n"
     << "#SBATCH --array=0-" << entries - 1 << (a.max_parallel > 0 ? "%" + std::to_string(a.max_parallel) : "") << "\n"
     << "#SBATCH --output=" << (out / "logs" / "%A_%a.out").string() << "\n"
     << "#SBATCH --cpus-per-task=" << a.cpus << "\n";
  // One GPU: one process. Several: one data-parallel rank per GPU on one
  // node (NCCL), started by srun, which sets SLURM_PROCID/SLURM_NTASKS.
  const bool ranks = a.gpus > 1;
  if (ranks)
    sb << "#SBATCH --nodes=1\n#SBATCH --ntasks=" << a.gpus << "\n#SBATCH --gpus-per-task=1\n";
  else
    sb << "#SBATCH --ntasks=1\n" << (a.gpus == 1 ? "#SBATCH --gres=gpu:1\n" : "");
  if (!a.time.empty()) sb << "#SBATCH --time=" << a.time << "\n";
  if (!a.partition.empty()) sb << "#SBATCH --partition=" << a.partition << "\n";
  if (!a.mem.empty()) sb << "#SBATCH --mem=" << a.mem << "\n";
  sb << "# Written by lrahost sweep: entry $SLURM_ARRAY_TASK_ID of " << (out / "sweep.json").string() << "\n"
     << (ranks ? "# Rendezvous of the ranks: the job's first node, a port per array task.\n"
                 "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)\n"
                 "export MASTER_PORT=$((29500 + SLURM_ARRAY_TASK_ID % 20000))\n"
               : "")
     << "exec " << (ranks ? "srun " : "") << shell_quote(self_path()) << " sweep --run-index \"$SLURM_ARRAY_TASK_ID\" --threads \"${SLURM_CPUS_PER_TASK:-0}\" "
     << shell_quote(out.string()) << "\n";
  return sb.str();
}

int run_on_slurm(const SweepArgs& a, const fs::path& out, size_t entries) {
  write_file_atomic(out / "sweep.sbatch", slurm_script(a, out, entries));
  fs::permissions(out / "sweep.sbatch", fs::perms::owner_exec, fs::perm_options::add);
  std::printf("sweep: Slurm job array in %s\n", (out / "sweep.sbatch").c_str());
  if (!a.submit) {
    std::printf("submit it with: sbatch %s\n", (out / "sweep.sbatch").c_str());
    return 0;
  }
  const std::string cmd = "sbatch --parsable " + shell_quote((out / "sweep.sbatch").string()) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw Error(ErrorKind::usage, "could not run sbatch");
  std::string text;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) text += buf;
  const int rc = pclose(p);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (rc != 0) throw Error(ErrorKind::usage, "sbatch failed: " + text + " (is Slurm reachable from here? SLURM_CONF?)");
  write_file_atomic(out / "slurm_job_id", text + "\n");
  std::printf("sweep: submitted Slurm job %s; gather with lrahost sweep --collect %s\n", text.c_str(), out.c_str());
  return 0;
}

// The entry's result.json is kept only when it is this entry's plugin: a
// folder of another plugin's run is not this one done.
void check_kept_result(const fs::path& result, const json& e, int64_t index) {
  std::string recorded_name, recorded_file;
  try {
    std::ifstream in(result);
    const json r = parse_json_input(in);
    recorded_name = r.at("plugin").at("name").get<std::string>();
    recorded_file = r.at("plugin").at("file").get<std::string>();
  } catch (const std::exception& ex) {
    throw Error(ErrorKind::data, result.string() + " is unreadable (" + ex.what() + "); remove it to run entry " +
                                     std::to_string(index) + " again");
  }
  const std::string want = e["plugin"];
  const bool is_path = want.find('/') != std::string::npos;
  std::error_code ec;
  const bool same = is_path ? fs::equivalent(want, recorded_file, ec) : recorded_name == want;
  if (!same)
    throw Error(ErrorKind::usage, result.string() + " is a run of plugin '" + recorded_name + "' (" + recorded_file +
                                      "), but entry " + std::to_string(index) + " is plugin '" + want +
                                      "'; one run folder holds one plugin's run: remove it or plan into another --out");
}

std::string collection_markdown(const std::vector<std::string>& tasks, const std::vector<ScoreEntry>& entries,
                                size_t missing, size_t planned) {
  std::ostringstream md;
  md << "| plugin | division | seeds |";
  for (const auto& t : tasks) md << " " << t << " |";
  md << " LRA avg |\n|---|---|---:|";
  for (size_t i = 0; i <= tasks.size(); ++i) md << "---:|";
  md << "\n";
  for (const auto& e : entries) {
    md << "| " << text::markdown_cell(e.plugin) << " | " << e.division << " | " << site::max_seeds(e) << " |";
    for (const auto& t : tasks) md << " " << format_task_cell(e, t) << " |";
    md << " " << format_average_cell(e) << " |\n";
  }
  md << "\nTest accuracy (%), mean ± std over seeds; LRA avg: the five tasks other than pathx, when all are present.\n";
  if (missing > 0) md << "\n" << missing << " of " << planned << " runs have no result (see leaderboard.json \"missing\").\n";
  return md.str();
}

}  // namespace

int plan_sweep(const SweepArgs& a) {
  // The lists are checked before anything is written: a plan (or a Slurm
  // array) with a task or seed bound to fail is never made. Plugins are not
  // loaded here (a failing plugin is one failed entry, recorded).
  auto plugins = split_list(a.plugins, "--plugins");
  const auto tasks = checked_task_list(a.tasks, a.preset, "--tasks");
  const std::vector<int64_t> seeds = parse_seed_list(a.seeds, "--seeds");
  // A plugin path is stored absolute: a Slurm array task may start in another directory.
  for (auto& p : plugins)
    if (p.find('/') != std::string::npos || fs::path(p).extension() == ".so") p = fs::absolute(p).lexically_normal().string();
  std::map<std::string, std::string> run_name = run_names(plugins);
  check_output_dir_argument(a.out);  // empty, a file: exit 2
  const fs::path out = fs::absolute(a.out);
  const DirLock lock(out);  // one sweep at a time in DIR (common/dir_lock.h); each run locks its own folder
  if (fs::exists(out / "sweep.json")) refuse_existing_plan(out, plugins);
  json entries = json::array();
  for (const auto& t : tasks)
    for (const auto& p : plugins)
      for (int64_t s : seeds)
        entries.push_back({{"index", entries.size()},
                           {"plugin", p},
                           {"task", t},
                           {"seed", s},
                           {"out", (out / "runs" / (t + "-" + run_name[p] + "-seed" + std::to_string(s))).string()}});
  json plan = {{"schema", kSweepSchema},
               {"lrahost", self_path()},
               {"preset", a.preset},
               {"sets", a.sets},
               {"data_dir", a.data_dir ? json(fs::absolute(*a.data_dir).string()) : json(nullptr)},
               {"entries", entries},
               {"created_at", utc_now()}};
  std::error_code ec;
  fs::create_directories(out / "logs", ec);
  if (ec) throw Error(ErrorKind::storage, storage_failure(out / "logs", "cannot create the folder", ec.value()));
  write_file_atomic(out / "sweep.json", plan.dump(2) + "\n");
  std::printf("sweep: %zu runs (%zu plugins x %zu tasks x %zu seeds) planned in %s\n", entries.size(), plugins.size(),
              tasks.size(), seeds.size(), (out / "sweep.json").c_str());
  return a.slurm ? run_on_slurm(a, out, entries.size()) : run_locally(out, entries);
}

int run_sweep_entry(const SweepArgs& a) {
  const fs::path dir = a.run_dir;
  const json plan = read_plan(dir);
  const auto& entries = plan["entries"];
  if (*a.run_index < 0 || *a.run_index >= static_cast<int64_t>(entries.size()))
    throw Error(ErrorKind::usage, "--run-index " + std::to_string(*a.run_index) + ": the plan has " +
                                      std::to_string(entries.size()) + " entries");
  const json& e = entries[*a.run_index];
  auto args = run_args(plan, e);
  if (const fs::path result = fs::path(e["out"].get<std::string>()) / "result.json"; fs::exists(result)) {
    check_kept_result(result, e, *a.run_index);
    std::printf("entry %lld already has a result; nothing to do\n", static_cast<long long>(*a.run_index));
    return 0;
  }
  if (fs::exists(fs::path(e["out"].get<std::string>()) / "checkpoints")) args.push_back("--resume");  // a requeued task continues
  if (a.threads > 0) args.insert(args.end(), {"--threads", std::to_string(a.threads)});
  std::vector<char*> argv;
  const std::string self = plan["lrahost"];
  argv.push_back(const_cast<char*>(self.c_str()));
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execv(self.c_str(), argv.data());
  throw Error(ErrorKind::internal, "could not start " + self + ": " + std::strerror(errno));
}

// Runs without a usable result are listed as missing.
SweepCollection collect_sweep(const SweepArgs& a) {
  SweepCollection c;
  c.dir = a.collect;
  const fs::path& dir = c.dir;
  const DirLock lock(dir, "--collect");  // not while the sweep (or another collect) writes there
  const json plan = read_plan(dir);
  std::vector<std::string> tasks;  // the plan's order
  std::vector<ScoreInput> results;
  json missing = json::array();
  for (const auto& e : plan["entries"]) {
    const std::string p = e["plugin"], t = e["task"];
    if (std::find(tasks.begin(), tasks.end(), t) == tasks.end()) tasks.push_back(t);
    const fs::path file = fs::path(e["out"].get<std::string>()) / "result.json";
    std::ifstream in(file);
    try {
      if (!in) {  // a run that ended with an error has it as run.log's last line
        const std::string why = run_log_error(e["out"].get<std::string>());
        throw std::runtime_error(why.empty() ? "no result.json" : "no result.json: " + why);
      }
      ScoreInput input{file.string(), parse_json_input(in)};
      check_score_input(input);
      results.push_back(std::move(input));
    } catch (const std::exception& ex) {
      missing.push_back({{"index", e["index"]}, {"plugin", p}, {"task", t}, {"seed", e["seed"]}, {"reason", ex.what()}});
    }
  }
  const std::vector<ScoreEntry> entries = aggregate_scores(results);
  json rows = json::array();
  for (const auto& e : entries) rows.push_back(to_json(e));
  c.markdown = collection_markdown(tasks, entries, missing.size(), plan["entries"].size());
  write_files_atomic(dir, {{"leaderboard.md", c.markdown},  // both or neither
                           {"leaderboard.json", json{{"schema", "lrahost.sweep-leaderboard/v2"},
                                                     {"tasks", tasks},
                                                     {"rows", rows},
                                                     {"missing", missing}}.dump(2) + "\n"}});
  return c;
}

}  // namespace lra::host
