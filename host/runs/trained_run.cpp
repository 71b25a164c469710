#include "runs/trained_run.h"
#include "common/json_input.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <torch/serialize.h>

#include "model/summary_probe.h"
#include "plugins/mixer_options.h"
#include "plugins/mixer_factory.h"
#include "common/sha256.h"
#include "plugins/descriptor.h"
#include "lra/status.h"
#include "results/result.h"
#include "train/module_io.h"

namespace lra::host {
namespace {

using nlohmann::json;

constexpr const char* kWhatIsExpected = "expected a result.json written by `lrahost run`";

// Dotted-path access to result.json; every message names file and field.
class RecordReader {
 public:
  RecordReader(const json& root, std::string file) : root_(root), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(ErrorKind::data, file_ + ": " + field + ": " + what + " (" + kWhatIsExpected + ")");
  }

  const json& at(const std::string& field) const {
    const json* v = &root_;
    std::string part;
    std::istringstream parts(field);
    while (std::getline(parts, part, '.')) {
      if (!v->is_object() || !v->contains(part)) fail(field, "missing");
      v = &(*v)[part];
    }
    return *v;
  }
  std::string text(const std::string& field) const {
    const auto& v = at(field);
    if (!v.is_string()) fail(field, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
  int64_t integer(const std::string& field) const {
    const auto& v = at(field);
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))
      fail(field, "expected an integer, got " + v.dump());
    return v.get<int64_t>();
  }
  double number(const std::string& field) const {
    const auto& v = at(field);
    if (!v.is_number()) fail(field, "expected a number, got " + v.dump());
    return v.get<double>();
  }
  const json& object(const std::string& field) const {
    const auto& v = at(field);
    if (!v.is_object()) fail(field, "expected an object, got " + v.dump());
    return v;
  }

 private:
  const json& root_;
  std::string file_;
};

// A recorded option value as the text `--set mixer.KEY=VALUE` would give, so
// resolve_mixer_options types it by the plugin's declaration again.
std::string option_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The run's mixer options, typed again by the plugin's declaration.
lra::Params recorded_options(const RunRecord& run, const LoadedPlugin& mixer) {
  std::map<std::string, std::string> given;
  for (const auto& [key, v] : run.plugin_options.items()) given[key] = option_text(v);
  return resolve_mixer_options(mixer, given);
}

}  // namespace

RunRecord read_run_record(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const std::string how = "pass --run with a directory written by `lrahost run --out DIR` (it holds result.json and "
                          "model.pt)";
  if (!fs::is_directory(dir))
    throw Error(ErrorKind::data, "run directory " + dir.string() +
                                     (fs::exists(dir) ? " is not a directory" : " does not exist") + "; " + how);
  RunRecord run;
  run.dir = dir;
  run.result_file = dir / kResultFileName;
  run.model_file = dir / "model.pt";
  if (!fs::exists(run.result_file)) {
    if (fs::exists(dir / "forgetting.json"))
      throw Error(ErrorKind::usage, dir.string() + " is a forgetting-curve run (`lrahost forget`, a causal LM); the "
                                    "attention span is measured on classifier runs of `lrahost run`");
    throw Error(ErrorKind::data, dir.string() + " holds no result.json: not a finished run (a failed run leaves none, "
                                 "an interrupted one is finished with `lrahost run --resume --out DIR`); " + how);
  }
  {
    std::ifstream in(run.result_file);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      run.result = parse_json_input(ss.str());
    } catch (const JsonInputError& e) {
      throw Error(ErrorKind::data,
                  run.result_file.string() + " is not valid JSON (" + e.what() + "); " + kWhatIsExpected);
    }
  }
  const RecordReader r(run.result, run.result_file.string());
  if (const auto schema = r.text("schema"); schema != kResultSchema)
    r.fail("schema", "is '" + schema + "', not '" + kResultSchema + "'");
  run.task = r.text("task.name");
  run.plugin_name = r.text("plugin.name");
  run.plugin_file = r.text("plugin.file");
  run.plugin_sha256 = r.text("plugin.sha256");
  run.plugin_options = r.object("plugin.options");
  run.data_fingerprint = r.text("task.data_fingerprint");
  const int64_t seed = r.integer("seed");
  if (seed < 0) r.fail("seed", "negative: " + std::to_string(seed));
  run.seed = static_cast<uint64_t>(seed);

  // The model exactly as the run built it: config.model read back through the
  // manifest's own field table (manifest/manifest.h config_manifest), so no
  // field of the model (model.padding_mask was one) can be left out here.
  run.model = config_manifest(r.at("config"), run.task, run.result_file.string()).model;
  // Where the head reads; a result from before the field ran LRA's placement.
  if (run.result.contains("model") && run.result["model"].is_object() && run.result["model"].contains("summary")) {
    const std::string name = r.text("model.summary");
    const auto summary = summary_position_from_name(name);
    if (!summary) r.fail("model.summary", "is '" + name + "', expected first, after_last or mean");
    run.summary = *summary;
    run.summary_recorded = true;
  } else {
    run.summary = lra_summary_position(run.model.pooling);
  }

  for (const auto& [key, v] : r.object("task.data_params").items()) {
    if (v.is_boolean()) {
      run.data_params[key] = v.get<bool>();
    } else if (v.is_number_integer()) {
      run.data_params[key] = v.get<int64_t>();
    } else if (v.is_number()) {
      run.data_params[key] = v.get<double>();
    } else if (v.is_string()) {
      run.data_params[key] = v.get<std::string>();
    } else {
      r.fail("task.data_params." + key, "expected a scalar, got " + v.dump());
    }
  }

  if (!fs::exists(run.model_file))
    throw Error(ErrorKind::data, run.model_file.string() + " is missing: the span needs the trained parameters that "
                                 "`lrahost run` saves as model.pt beside result.json; train the run again with this "
                                 "lrahost (or restore the file)");
  return run;
}

const LoadedPlugin& open_run_mixer(const RunRecord& run, const std::optional<std::string>& plugin, bool* same_file) {
  // result.json may come from someone else's bundle: a path read from it
  // (plugin.file) is never loaded, even when its SHA-256 matches, as the file
  // and the hash would come from the same hand. Only a file the user names
  // (--plugin) or a plugin installed under the recorded name is loaded.
  std::filesystem::path file;
  if (plugin) {
    file = resolve_plugin(*plugin, LRA_KIND_MIXER);
  } else {
    // By descriptor name among the discovered plugins, not through
    // resolve_plugin: a recorded name that looks like a path stays a name.
    for (const auto& p : discover_plugins())
      if (p.error.empty() && p.problems.empty() && p.descriptor.kind == LRA_KIND_MIXER &&
          p.descriptor.name == run.plugin_name) {
        file = p.file;
        break;
      }
    if (file.empty())
      throw Error(ErrorKind::plugin,
                  "no mixer plugin named '" + run.plugin_name + "' (plugin.name in " + run.result_file.string() +
                      ") is installed, and the file the run recorded (plugin.file " + run.plugin_file +
                      ") is not loaded from a result file; it was not loaded. Pass the plugin's library explicitly "
                      "with --plugin PATH if you trust it, or install it under its name (LRA_PLUGIN_PATH)");
  }
  const LoadedPlugin& mixer = load_plugin(file, LRA_KIND_MIXER);
  if (mixer.descriptor.name != run.plugin_name)
    throw Error(ErrorKind::plugin, mixer.descriptor.file.string() + " is plugin '" + mixer.descriptor.name +
                                       "', but the run (" + run.result_file.string() + ") trained '" + run.plugin_name +
                                       "'; pass the run's plugin with --plugin PATH or install it under its name "
                                       "(LRA_PLUGIN_PATH)");
  if (same_file) *same_file = mixer.sha256 == bare_sha256(run.plugin_sha256);
  return mixer;
}

LoadedData load_run_data(const RunRecord& run, const LoadedPlugin& task, const std::optional<std::string>& data_dir,
                         int threads) {
  const auto root = data_root(data_dir);
  LoadedData data = load_task_data(task, run.data_params, root, threads, true, run.result_file.string());
  if (data.fingerprint != run.data_fingerprint)
    throw Error(ErrorKind::data, "the " + run.task + " data under " + root.string() + " (" + data.dataset.source +
                                     ") has fingerprint " + data.fingerprint + ", the run trained on " +
                                     run.data_fingerprint + " (task.data_fingerprint in " + run.result_file.string() +
                                     "); pass --data-dir with the data the run used");
  return data;
}

SummaryPosition probe_run_summary(const RunRecord& run, const LoadedPlugin& mixer, const lra::TaskInfo& info) {
  const BackboneSpec spec{run.model, info.vocab_size, info.num_classes, run.seed, info.paired};
  return choose_summary_position(plugin_mixer_factory(mixer, recorded_options(run, mixer)), spec);
}

void check_run_summary(const RunRecord& run, const LoadedPlugin& mixer, const lra::TaskInfo& info) {
  if (!run.summary_recorded) return;  // an older host: LRA's placement, whatever the mixer
  const SummaryPosition probed = probe_run_summary(run, mixer, info);
  if (probed != run.summary)
    throw Error(ErrorKind::rules, run.result_file.string() + ": model.summary is '" +
                                      summary_position_name(run.summary) + "', but the host's probe of " +
                                      mixer.descriptor.name + " as this run builds it gives '" +
                                      summary_position_name(probed) +
                                      "' (docs/rules.md#causal-mixers-and-the-summary-token)");
}

Classifier fresh_classifier(const RunRecord& run, const LoadedPlugin& mixer, const lra::TaskInfo& info,
                            const torch::Device& device) {
  const lra::Params options = recorded_options(run, mixer);
  BackboneSpec spec{run.model, info.vocab_size, info.num_classes, run.seed, info.paired, run.summary};
  // As `run` built it: mixers may draw fixed, non-trained tensors from the seed.
  torch::manual_seed(run.seed);
  Classifier model(spec, plugin_mixer_factory(mixer, options));
  model->to(device);
  model->eval();
  return model;
}

Classifier load_trained_classifier(const RunRecord& run, const LoadedPlugin& mixer, const lra::TaskInfo& info,
                                   const torch::Device& device) {
  Classifier model = fresh_classifier(run, mixer, info, torch::kCPU);
  try {
    load_module(*model, run.model_file, device);
  } catch (const c10::Error& e) {
    std::string why = e.what_without_backtrace();
    if (auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
    throw Error(ErrorKind::data, run.model_file.string() + " does not fit the model " + run.result_file.string() +
                                     " describes (" + why + "); was the run directory edited or mixed with another "
                                     "run?");
  }
  model->to(device);
  model->eval();
  return model;
}

}  // namespace lra::host
