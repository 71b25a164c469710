#include "results/submission.h"
#include "common/json_input.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace lra::host {
namespace {

using nlohmann::json;

std::string text_at(const json& j, const json::json_pointer& p) {
  if (!j.contains(p)) return "(absent)";
  const json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::vector<int64_t> missing_seeds(const std::vector<int64_t>& official, const std::vector<int64_t>& present) {
  std::vector<int64_t> missing;
  for (int64_t s : official)
    if (std::find(present.begin(), present.end(), s) == present.end()) missing.push_back(s);
  return missing;
}

std::string seed_list_text(const std::vector<int64_t>& seeds) {
  std::string s;
  for (int64_t x : seeds) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

std::vector<SubmissionFile> read_submission(const std::vector<std::filesystem::path>& files,
                                            const OfficialLookup& official) {
  std::vector<SubmissionFile> out;
  for (const auto& f : files) {
    SubmissionFile s{f, verify_result_file(f, official), nullptr};
    if (s.report.readable) {
      std::ifstream in(f);
      try {
        s.result = parse_json_input(in);
      } catch (const JsonInputError&) {
        s.result = nullptr;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

using Reasons = std::vector<std::string>;

// Host identity: one build wrote the whole submission.
void check_host_identity(const std::vector<SubmissionFile>& files, Reasons& reasons) {
  static const json::json_pointer kHost[] = {json::json_pointer("/host/version"),
                                             json::json_pointer("/host/git_revision"),
                                             json::json_pointer("/host/torch_version")};
  std::map<std::string, std::pair<std::string, std::string>> first_host;  // field -> (value, file)
  for (const auto& f : files) {
    if (f.result.is_null()) continue;
    for (const auto& p : kHost) {
      const std::string v = text_at(f.result, p);
      const auto [it, inserted] = first_host.emplace(p.to_string(), std::make_pair(v, f.path.string()));
      const auto& [seen, seen_in] = it->second;
      if (!inserted && seen != v)
        reasons.push_back("host identity differs: " + p.to_string().substr(1) + " is '" + seen + "' in " + seen_in +
                          " but '" + v + "' in " + f.path.string() +
                          " (a submission comes from one host build; rerun with one)");
    }
  }
}

// Plugin identity: one name, one file hash and version.
void check_plugin_identity(const std::vector<SubmissionFile>& files, Reasons& reasons) {
  std::map<std::string, std::pair<std::string, std::string>> plugin_seen;  // name -> (sha256 + version, file)
  for (const auto& f : files) {
    if (f.result.is_null()) continue;
    const std::string name = text_at(f.result, json::json_pointer("/plugin/name"));
    const std::string id = text_at(f.result, json::json_pointer("/plugin/sha256")) + " version " +
                           text_at(f.result, json::json_pointer("/plugin/version"));
    auto [it, inserted] = plugin_seen.emplace(name, std::make_pair(id, f.path.string()));
    if (!inserted && it->second.first != id)
      reasons.push_back("plugin '" + name + "' differs between files: sha256 " + it->second.first + " in " +
                        it->second.second + " but sha256 " + id + " in " + f.path.string() +
                        " (every result of one plugin must come from the same .so)");
  }
}

// (plugin, options, task, manifest_sha256) -> (seed, file) of each closed result.
using TrialKey = std::tuple<std::string, std::string, std::string, std::string>;
using Trials = std::map<TrialKey, std::vector<std::pair<int64_t, std::string>>>;

Trials closed_trials(const std::vector<SubmissionFile>& files) {
  Trials trials;
  for (const auto& f : files) {
    if (f.result.is_null() || f.report.division != "closed") continue;
    const auto seed = f.result.contains("seed") && f.result["seed"].is_number_integer()
                          ? f.result["seed"].get<int64_t>()
                          : int64_t{-1};
    trials[{text_at(f.result, json::json_pointer("/plugin/name")),
            text_at(f.result, json::json_pointer("/plugin/options")),
            text_at(f.result, json::json_pointer("/task/name")),
            text_at(f.result, json::json_pointer("/task/manifest_sha256"))}]
        .push_back({seed, f.path.string()});
  }
  return trials;
}

// One entry's seeds: none repeated, none missing, none beyond the official ones.
void check_trial_seeds(const std::string& who, const std::vector<std::pair<int64_t, std::string>>& got,
                       const std::vector<int64_t>& want, Reasons& reasons) {
  std::map<int64_t, std::string> by_seed;
  for (const auto& [seed, file] : got) {
    auto [it, inserted] = by_seed.emplace(seed, file);
    if (!inserted)
      reasons.push_back(who + ": seed " + std::to_string(seed) + " appears twice (" + it->second + ", " + file +
                        "); keep one result per seed");
  }
  std::vector<int64_t> present;
  for (const auto& [s, file] : by_seed) present.push_back(s);
  const std::vector<int64_t> missing = missing_seeds(want, present), extra = missing_seeds(present, want);
  if (!missing.empty())
    reasons.push_back(who + ": seeds incomplete: missing " + seed_list_text(missing) + " of " + seed_list_text(want) +
                      " (the official manifest's rules.seeds; run them with lrahost run --seed S or lrahost suite)");
  if (!extra.empty())
    reasons.push_back(who + ": seed(s) " + seed_list_text(extra) + " are not among the official trial seeds " +
                      seed_list_text(want) + " (a submission reports exactly those; drop the others)");
}

// Seeds complete, per closed (plugin, options, task).
void check_seeds_complete(const std::vector<SubmissionFile>& files, const OfficialSeeds& official_seeds,
                          Reasons& reasons) {
  for (const auto& [key, got] : closed_trials(files)) {
    const auto& [plugin, options, task, manifest_sha] = key;
    const auto want = official_seeds(task, manifest_sha);
    if (!want) continue;  // no official manifest: the file checks already made it open
    const std::string who = plugin + (options == "{}" ? "" : " " + options) + " on " + task;
    check_trial_seeds(who, got, *want, reasons);
  }
}

}  // namespace

SubmissionReport verify_submission(const std::vector<SubmissionFile>& files, const OfficialSeeds& official_seeds) {
  SubmissionReport rep;
  rep.files = files.size();
  bool all_valid = !files.empty(), all_closed = !files.empty();
  for (const auto& f : files) {
    all_valid = all_valid && f.report.readable && f.report.valid;
    all_closed = all_closed && f.report.division == "closed";
  }
  if (files.empty()) rep.reasons.push_back("no result files");
  if (!all_valid) rep.reasons.push_back("not every result file is valid (see each file's reasons)");

  check_host_identity(files, rep.reasons);
  check_plugin_identity(files, rep.reasons);
  check_seeds_complete(files, official_seeds, rep.reasons);

  rep.valid = rep.reasons.empty();
  rep.division = rep.valid && all_closed ? "closed" : "open";
  return rep;
}

}  // namespace lra::host
