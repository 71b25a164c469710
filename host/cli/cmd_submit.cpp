// `lrahost submit RUNS... --out BUNDLE`: packs what a maintainer needs to
// check runs without trusting their author (reevaluation/bundle.h): each
// result.json with its final model.pt, and each distinct plugin .so or Python
// mixer's source folder, and (--source) a compiled mixer's source folder.
// Only valid results whose model.pt and plugin files are the ones they record
// go in.
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "runs/official_registry.h"
#include "common/utc_time.h"
#include "common/build_info.h"
#include "common/dir_lock.h"
#include "common/json_input.h"
#include "common/sha256.h"
#include "lra/status.h"
#include "reevaluation/bundle.h"
#include "reevaluation/bundle_python.h"
#include "reevaluation/bundle_source.h"
#include "reevaluation/judged_code.h"
#include "results/result.h"
#include "results/verify.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A bundle-safe folder name that keeps the run's task in sight: "<task>-seed-<seed>"
// from the result itself (a suite's folders are all "seed-S"), "-2", "-3", ...
// when one task and seed are there more than once (other options or plugins).
std::string run_name(const json& result, std::set<std::string>& used) {
  const json* task = json_at(result, {"task", "name"});
  const json* seed = json_at(result, {"seed"});
  std::string base = (task && task->is_string() ? task->get<std::string>() : std::string("run")) + "-seed-" +
                     (seed && seed->is_number_integer() ? seed->dump() : std::string("unknown"));
  for (char& c : base)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '-';
  while (!base.empty() && base.front() == '.') base.erase(0, 1);
  if (base.size() > 70) base.resize(70);  // room for the suffix within the 80 characters a bundle allows
  std::string name = base;
  for (int i = 2; used.count(name); ++i) name = base + "-" + std::to_string(i);
  used.insert(name);
  return name;
}

// A compiled mixer of the bundle that is not a built-in (reevaluation/judged_code.h).
struct CompiledMixer {
  std::string name;   // plugin.name
  bool closed = false;  // some run of it is in the closed division
};

// --source [NAME=]DIR, each to the compiled mixers it names: the .so SHA-256 -> its folder.
std::map<std::string, fs::path> source_folders(const std::vector<std::string>& given,
                                               const std::map<std::string, CompiledMixer>& compiled) {
  std::map<std::string, fs::path> out;
  std::set<std::string> names;
  for (const auto& [sha, m] : compiled) names.insert(m.name);
  std::string listed;
  for (const auto& n : names) listed += (listed.empty() ? "" : ", ") + n;
  for (const auto& g : given) {
    const size_t eq = g.find('=');
    const std::string name = eq == std::string::npos ? "" : g.substr(0, eq);
    const fs::path dir = eq == std::string::npos ? g : g.substr(eq + 1);
    if (name.empty() && names.size() != 1)
      throw Error(ErrorKind::usage, "--source " + g + ": the bundle's runs use " + std::to_string(names.size()) +
                                        " compiled mixers that are not built in (" + (listed.empty() ? "none" : listed) +
                                        "); say whose source it is: --source NAME=DIR");
    bool used = false;
    for (const auto& [sha, m] : compiled)
      if (name.empty() || m.name == name) {
        if (out.count(sha))
          throw Error(ErrorKind::usage, "--source " + g + ": the source of '" + m.name + "' was given twice");
        out[sha] = dir;
        used = true;
      }
    if (!used)
      throw Error(ErrorKind::usage, "--source " + g + ": no run of the bundle uses a compiled mixer named '" + name +
                                        "' (those it uses: " + (listed.empty() ? "none" : listed) + ")");
  }
  for (const auto& [sha, m] : compiled)
    if (m.closed && !out.count(sha)) throw Error(ErrorKind::usage, "cannot submit: " + closed_binary_refusal(m.name));
  return out;
}

}  // namespace

int submit_command(const SubmitArgs& a) {
  check_output_path_name(a.out);  // empty or blank-named: exit 2 before any work
  const auto files = collect_result_files({a.runs.begin(), a.runs.end()});
  std::vector<BundleFile> pack;
  json runs = json::array();
  json listed = json::object(), sizes = json::object();
  std::set<std::string> used, plugins;
  std::size_t plugin_files = 0;  // files packed for the plugins (a Python folder may hold several)
  std::vector<std::pair<std::string, json>> parsed;  // run folder -> result, for the repeated-run check
  std::map<std::string, CompiledMixer> compiled;     // the .so SHA-256 -> a compiled mixer that is no built-in
  for (const auto& file : files) {
    // A Python mixer's sources first: a changed one is the submitter's to
    // restore (exit 2, as a changed .so), not a result that fails verify.
    std::optional<PythonPack> python;
    {
      std::ifstream in(file, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      try {
        const json early = parse_json_input(ss.str());
        if (json_at(early, {"plugin", "source"}) && !json_at(early, {"plugin", "source"})->is_null())
          python = python_pack(early, file);
      } catch (const JsonInputError&) {
        // verify says why below
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::data) throw;  // a malformed plugin.source: verify says why below
      }
    }
    const VerifyReport v = verify_result_file(file, registry_official);
    if (!v.valid) {
      std::string why;
      for (const auto& r : v.reasons) why += "\n  - " + r;
      throw Error(ErrorKind::rules, file.string() + " does not verify, so it cannot be submitted:" + why);
    }
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const json result = parse_json_input(ss.str());
    const fs::path model = file.parent_path() / "model.pt";
    const json* model_sha = json_at(result, {"model", "sha256"});
    if (!model_sha || !model_sha->is_string())
      throw Error(ErrorKind::data, file.string() + " records no model.sha256 (written by an older lrahost): its "
                                                   "model.pt cannot be tied to it; run it again to submit it");
    if (!fs::is_regular_file(model))
      throw Error(ErrorKind::data, model.string() + " is missing: a submission carries each run's final model.pt, "
                                                    "which lrahost run writes beside result.json");
    // verify has compared model.pt with model.sha256 already.
    auto add = [&](const std::string& entry, const fs::path& source, const std::string& sha) {
      pack.push_back({entry, source});
      listed[entry] = sha;
      sizes[entry] = static_cast<int64_t>(fs::file_size(source));
    };
    std::string plugin_entry;  // bundle.json's runs[].plugin
    if (json_at(result, {"plugin", "source"}) && !json_at(result, {"plugin", "source"})->is_null()) {
      // verify passed, so plugin.source is well formed: python_pack read it above.
      if (!python) python = python_pack(result, file);
      plugin_entry = python->plugin.spec();
      if (plugins.insert(python->plugin.folder()).second)
        for (const auto& f : python->files) {
          add(f.entry, f.source, f.sha256);
          ++plugin_files;
        }
    } else {
      const std::string plugin_file = result.at("plugin").value("file", std::string());
      const std::string plugin_sha = bare_sha256(result.at("plugin").value("sha256", std::string()));
      if (plugin_file.empty() || !fs::is_regular_file(plugin_file))
        throw Error(ErrorKind::usage, file.string() + ": its plugin file '" + plugin_file +
                                          "' (plugin.file) is missing; restore that build of plugin '" +
                                          result.at("plugin").value("name", std::string()) + "' there");
      const std::string have = sha256_file(plugin_file);
      if (have != plugin_sha)
        throw Error(ErrorKind::usage, file.string() + ": its plugin file " + plugin_file +
                                          " has changed since the run (sha256 " + have + ", plugin.sha256 " +
                                          plugin_sha + "); a bundle must carry the build that produced the result");
      plugin_entry = "plugins/" + plugin_sha + ".so";
      if (plugins.insert(plugin_entry).second) {
        add(plugin_entry, plugin_file, plugin_sha);
        ++plugin_files;
      }
      if (!recorded_builtin_mixer(result)) {
        CompiledMixer& m = compiled[plugin_sha];
        m.name = result.at("plugin").value("name", std::string());
        m.closed = m.closed || v.division == "closed";
      }
    }
    parsed.emplace_back(file.parent_path().string(), result);
    const std::string name = run_name(result, used);
    add("runs/" + name + "/result.json", file, sha256_file(file));
    add("runs/" + name + "/model.pt", model, model_sha->get<std::string>());
    // A self-pretrained run: the pretraining's weights, which verify has tied to the record.
    const json* pretrained_sha = json_at(result, {"pretraining", "weights_sha256"});
    if (pretrained_sha && pretrained_sha->is_string()) {
      const fs::path weights = file.parent_path() / result["pretraining"].value("weights_file", std::string());
      if (!fs::is_regular_file(weights))
        throw Error(ErrorKind::data, weights.string() + " is missing: a self-pretrained run's submission carries the "
                                                        "weights its fine-tuning started from");
      add("runs/" + name + "/pretraining/encoder.pt", weights, pretrained_sha->get<std::string>());
    }
    // ... and its weights after the fine-tuning's first updates, which the verifier replays from encoder.pt.
    const json* start_sha = json_at(result, {"pretraining", "fine_tuning_start", "weights_sha256"});
    if (start_sha && start_sha->is_string()) {
      const fs::path start =
          file.parent_path() / result["pretraining"]["fine_tuning_start"].value("weights_file", std::string());
      if (!fs::is_regular_file(start))
        throw Error(ErrorKind::data, start.string() + " is missing: a self-pretrained run's submission carries the "
                                                      "fine-tuning's weights after its first updates");
      add("runs/" + name + "/pretraining/fine-tuning-start.pt", start, start_sha->get<std::string>());
    }
    runs.push_back({{"dir", name},
                    {"pretrained", pretrained_sha != nullptr},
                    {"fine_tuning_start", start_sha != nullptr && start_sha->is_string()},
                    {"plugin", plugin_entry},
                    {"plugin_name", result.at("plugin").value("name", std::string())},
                    {"task", result.at("task").value("name", std::string())},
                    {"seed", result.value("seed", json())},
                    {"division", v.division},
                    {"result_digest", result.value("digest", std::string())}});
  }
  // The leaderboard would refuse the pair (exit 5) and the verifier evaluate
  // both: refused here, before anything is written.
  if (auto why = repeated_run(parsed))
    throw Error(ErrorKind::usage, "cannot submit one run twice: " + *why + " (a bundle carries each run once)");
  // Each compiled mixer's source, where given (a closed run's must be).
  std::vector<std::string> source_lines;
  for (const auto& [sha, dir] : source_folders(a.sources, compiled)) {
    const SourcePack sp = source_pack(dir, sha);
    for (const auto& f : sp.files) {
      pack.push_back({f.entry, f.source});
      listed[f.entry] = f.sha256;
      sizes[f.entry] = static_cast<int64_t>(fs::file_size(f.source));
    }
    std::string line = "  source of " + compiled.at(sha).name + ": " + std::to_string(sp.files.size()) + " file" +
                       (sp.files.size() == 1 ? "" : "s") + " from " + dir.string();
    if (!sp.skipped.empty()) {
      line += " (left out, not source: ";
      for (size_t i = 0; i < sp.skipped.size() && i < 5; ++i) line += (i ? ", " : "") + sp.skipped[i];
      if (sp.skipped.size() > 5) line += ", and " + std::to_string(sp.skipped.size() - 5) + " more";
      line += ")";
    }
    source_lines.push_back(line);
  }
  const json index = {{"schema", kBundleSchema},
                      {"created_at", utc_now()},
                      {"host", {{"version", build_info().version}, {"git_revision", build_info().git_revision}}},
                      {"runs", runs},
                      {"files", listed},
                      {"sizes", sizes}};
  write_bundle(a.out, index, pack);
  // A Python mixer is one plugin whose folder may hold several files.
  std::printf("bundle %s: %zu run%s, %zu plugin%s in %zu file%s\n", a.out.c_str(), runs.size(),
              runs.size() == 1 ? "" : "s", plugins.size(), plugins.size() == 1 ? "" : "s", plugin_files,
              plugin_files == 1 ? "" : "s");
  for (const auto& r : runs)
    std::printf("  %s: %s on %s, seed %s, %s\n", r["dir"].get<std::string>().c_str(),
                r["plugin_name"].get<std::string>().c_str(), r["task"].get<std::string>().c_str(), r["seed"].dump().c_str(),
                r["division"].get<std::string>().c_str());
  for (const auto& line : source_lines) std::printf("%s\n", line.c_str());
  return 0;
}

void add_submit_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<SubmitArgs>();
  auto* sbc = app.add_subcommand("submit", "Pack runs (result.json, model.pt) and their plugin (.so or Python "
                                           "sources) into one bundle for a leaderboard maintainer");
  sbc->add_option("runs", a->runs, "Run directories, folders holding them, or result.json files")->required();
  sbc->add_option("--out", a->out, "The bundle file to write (a tar)")->required();
  sbc->add_option("--source", a->sources,
                  "[NAME=]DIR: the source folder (with its CMakeLists.txt) of the compiled mixer NAME, which the "
                  "verifier builds and runs instead of the .so; required for a closed run's compiled mixer");
  on_parsed(sbc, slot, a, [](SubmitArgs& args) { return submit_command(args); });
}

}  // namespace lra::host
