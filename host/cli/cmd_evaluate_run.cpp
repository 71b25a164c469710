// `lrahost evaluate-run` (internal, not listed in --help): the part of
// `verify --reevaluate` that runs submitted plugin code, started by the
// verifier inside the sandbox (reevaluation/sandbox.h). Two modes:
//   --init-weights  rebuild the model from the run's recorded configuration
//                   and seed and save its freshly initialised weights to --out
//                   (the verifier's "do the predictions depend on the trained
//                   weights?" pass evaluates those); with --groups FILE also
//                   the AdamW groups the mixers' optimizer hints give, as
//                   result.json records them, and with --summary FILE where
//                   the host's probe puts the summary (the verifier compares
//                   both with the record);
//   (default)       rebuild the model, load RUN/model.pt, and write the
//                   predicted class of every example of --inputs to --out
//                   (reevaluation/predictions_file.h).
// Whatever this process writes is untrusted: the verifier reads it with
// bounded, symlink-free reads, and holds the labels and the scoring itself.
// For a Python mixer, --python-report FILE also gets the interpreter's
// versions and the identity computed from the staged sources, or why the
// class did not open (reevaluation/python_report.h).
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/json_input.h"
#include "device/device.h"
#include "lra/status.h"
#include "plugins/python_environment.h"
#include "plugins/python_mixer.h"
#include "reevaluation/inputs_file.h"
#include "reevaluation/predictions_file.h"
#include "runs/trained_run.h"
#include "train/module_io.h"
#include "rules/summary_position.h"
#include "train/optimizer_groups.h"
#include "train/trainer.h"

#include <fstream>
#include <sstream>

namespace lra::host {
namespace {

// The plugin file from the bundle, and only if it is the one the run names.
const LoadedPlugin& open_run_plugin(const EvaluateRunArgs& a, const RunRecord& run) {
  const LoadedPlugin& mixer = open_plugin(a.plugin, LRA_KIND_MIXER);
  if (mixer.descriptor.name != run.plugin_name || mixer.sha256 != run.plugin_sha256)
    throw Error(ErrorKind::plugin, a.plugin + " is plugin '" + mixer.descriptor.name + "' (sha256 " + mixer.sha256 +
                                       "), the run names '" + run.plugin_name + "' (sha256 " + run.plugin_sha256 + ")");
  return mixer;
}

// open_run_plugin, for a Python mixer with --python-report: the report is
// written whether the class opens or not. The probe comes first, before any
// submitted code has run in this interpreter.
const LoadedPlugin& open_python_plugin(const EvaluateRunArgs& a, const RunRecord& run) {
  nlohmann::json report = nlohmann::json::object();
  try {
    const PythonEnvironment env = python_environment(std::filesystem::temp_directory_path() / "lrahost-probe");
    report["environment"] = {{"python", env.python}, {"torch", env.torch}};
  } catch (const Error& e) {
    report["environment"] = {{"error", e.what()}};
  }
  auto write = [&] { write_file_atomic(a.python_report, report.dump()); };
  try {
    const LoadedPlugin& mixer = open_plugin(a.plugin, LRA_KIND_MIXER);
    report["identity"] = {{"name", mixer.descriptor.name}, {"sha256", mixer.sha256}, {"source", mixer.source}};
    const LoadedPlugin& checked = open_run_plugin(a, run);
    write();
    return checked;
  } catch (const Error& e) {
    report["error"] = e.what();
    write();
    throw;
  }
}

}  // namespace

int evaluate_run_command(const EvaluateRunArgs& a) {
  configure_cpu_threads(a.threads > 0 ? a.threads : 1);
  RunRecord run = read_run_record(a.run);
  const LoadedPlugin& mixer = !a.python_report.empty() && is_python_mixer_spec(a.plugin)
                                  ? open_python_plugin(a, run)
                                  : open_run_plugin(a, run);
  nlohmann::json info_json;
  {
    std::ifstream in(a.task_info);
    std::stringstream ss;
    ss << in.rdbuf();
    info_json = parse_json_input(ss.str());
  }
  lra::TaskInfo info;
  info.vocab_size = info_json.at("vocab_size").get<int64_t>();
  info.num_classes = info_json.at("num_classes").get<int64_t>();
  info.natural_len = info_json.at("natural_len").get<int64_t>();
  info.paired = info_json.at("paired").get<bool>();
  const torch::Device device = pick_device(a.device);
  if (a.init_weights) {
    // Where the host's probe puts the summary, for the verifier to compare with the record.
    if (!a.summary.empty()) write_file_atomic(a.summary, summary_position_name(probe_run_summary(run, mixer, info)));
    Classifier fresh = fresh_classifier(run, mixer, info, torch::kCPU);
    save_module(*fresh, a.out);
    if (!a.groups.empty()) {
      const Manifest m = config_manifest(run.result.at("config"), run.task, run.result_file.string());
      std::vector<std::shared_ptr<lra::Mixer>> mixers;
      for (const auto& block : fresh->blocks()) mixers.push_back(block->mixer);
      const auto groups = optimizer_groups(*fresh, mixers, static_cast<int>(mixer.descriptor.abi_minor),
                                           mixer.descriptor.name, m.train);
      write_file_atomic(a.groups, optimizer_record(groups, m.train.weight_decay).dump());
    }
    return 0;
  }
  if (a.inputs.empty()) throw Error(ErrorKind::usage, "evaluate-run: --inputs is required without --init-weights");
  Classifier model = load_trained_classifier(run, mixer, info, device);
  // The passes the run evaluated in (train/trainer.h).
  const auto& train = run.result.at("config").at("train");
  const int64_t batch = evaluation_pass(run.result.at("timing").value("micro_batch", int64_t{0}),
                                        train.value("batch_size", int64_t{0}), train.value("eval_batch_size", int64_t{32}));
  const bool bf16 = device.is_cuda() && run.result.at("timing").value("precision", std::string()) == "bfloat16 autocast";
  const lra::Split split = read_inputs_file(a.inputs);
  write_predictions_file(a.out, predict(model, split, run.model.max_len, batch, device, bf16));
  return 0;
}

void add_evaluate_run_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<EvaluateRunArgs>();
  auto* evc = app.add_subcommand("evaluate-run", "Internal: the sandboxed half of verify --reevaluate");
  evc->group("");  // not listed in --help
  evc->add_option("--run", a->run)->required();
  evc->add_option("--plugin", a->plugin)->required();
  evc->add_option("--task-info", a->task_info)->required();
  evc->add_option("--inputs", a->inputs);
  evc->add_flag("--init-weights", a->init_weights);
  evc->add_option("--out", a->out)->required();
  evc->add_option("--device", a->device);
  evc->add_option("--threads", a->threads);
  evc->add_option("--python-report", a->python_report);
  evc->add_option("--groups", a->groups);
  evc->add_option("--summary", a->summary);
  on_parsed(evc, slot, a, [](EvaluateRunArgs& args) { return evaluate_run_command(args); });
}

}  // namespace lra::host
