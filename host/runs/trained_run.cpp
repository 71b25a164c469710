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
#include "common/python_source_files.h"
#include "common/sha256.h"
#include "plugins/descriptor.h"
#include "common/text.h"
#include "lra/status.h"
#include "results/result.h"
#include "train/module_io.h"

namespace lra::host {
namespace {

using nlohmann::json;

// The run's mixer options, typed again by the plugin's declaration.
lra::Params recorded_options(const RunRecord& run, const LoadedPlugin& mixer) {
  return resolve_mixer_options(mixer, recorded_option_texts(run));
}

}  // namespace

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
    // A Python mixer's run kept its sources: name the copy, never load it unasked
    // (a run folder may come from someone else's bundle).
    const auto parts = split_python_spec(run.plugin_file);
    const std::filesystem::path copy = run.result_file.parent_path() / kRunSourceCopyDir;
    std::error_code ec;
    if (file.empty() && parts && std::filesystem::is_regular_file(copy / std::filesystem::path(parts->first).filename(), ec))
      throw Error(ErrorKind::plugin,
                  "'" + run.plugin_name + "' is a Python mixer; its run kept the sources it ran in " + copy.string() +
                      ". Pass them with --plugin " + (copy / std::filesystem::path(parts->first).filename()).string() +
                      ":" + parts->second + " if you trust them (a run folder's code is never loaded unasked)");
    if (file.empty())
      throw Error(ErrorKind::plugin,
                  "no mixer plugin named '" + run.plugin_name + "' (plugin.name in " + run.result_file.string() +
                      ") is installed, and the file the run recorded (plugin.file " + run.plugin_file +
                      ") is not loaded from a result file; it was not loaded. Pass the plugin explicitly with --plugin PATH "
                      "(its .so, or FILE.py:CLASS for a Python mixer) if you trust it, or install it under its name "
                      "(LRA_PLUGIN_PATH)");
  }
  const LoadedPlugin& mixer = load_plugin(file, LRA_KIND_MIXER);
  if (mixer.descriptor.name != run.plugin_name)
    throw Error(ErrorKind::plugin, mixer.descriptor.file.string() + " is plugin '" + mixer.descriptor.name +
                                       "', but the run (" + run.result_file.string() + ") trained '" + run.plugin_name +
                                       "'; pass the run's plugin with --plugin PATH (its .so, or FILE.py:CLASS for a Python mixer) or "
                                       "install it under its name (LRA_PLUGIN_PATH)");
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
    const std::string why = text::first_line(e.what_without_backtrace());
    throw Error(ErrorKind::data, run.model_file.string() + " does not fit the model " + run.result_file.string() +
                                     " describes (" + why + "); was the run directory edited or mixed with another "
                                     "run?");
  }
  model->to(device);
  model->eval();
  return model;
}

}  // namespace lra::host
