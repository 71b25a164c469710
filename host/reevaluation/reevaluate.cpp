#include "reevaluation/reevaluate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include "common/utc_time.h"
#include "common/atomic_file.h"
#include "common/untrusted_file.h"
#include "common/build_info.h"
#include "common/json_input.h"
#include "common/sha256.h"
#include "data/task_data.h"
#include "device/device.h"
#include "manifest/manifest.h"
#include "model/backbone.h"
#include "reevaluation/data_params_check.h"
#include "reevaluation/model_parameters.h"
#include "reevaluation/predictions_file.h"
#include "manifest/manifest_text.h"
#include "rules/rules.h"
#include "lra/status.h"
#include "plugins/loader.h"
#include "reevaluation/bundle.h"
#include "reevaluation/inputs_file.h"
#include "reevaluation/private_set.h"
#include "reevaluation/python_report.h"
#include "reevaluation/submitted_plugin.h"
#include "reevaluation/reevaluation_signature.h"
#include "results/result.h"
#include "rules/summary_position.h"
#include "results/signature.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {


std::string text_at(const json& root, std::initializer_list<const char*> keys) {
  const json* v = json_at(root, keys);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * x);
  return buf;
}

lra::Params params_from_json(const json& j) {
  lra::Params p;
  if (!j.is_object()) return p;
  for (const auto& [key, v] : j.items()) {
    if (v.is_boolean()) p[key] = v.get<bool>();
    else if (v.is_number_integer()) p[key] = v.get<int64_t>();
    else if (v.is_number()) p[key] = v.get<double>();
    else if (v.is_string()) p[key] = v.get<std::string>();
    else throw Error(ErrorKind::data, "task.data_params." + key + " is not a scalar: " + v.dump());
  }
  return p;
}

uint64_t secret_seed(const std::optional<uint64_t>& given) {
  if (given) return *given;
  std::random_device rd;  // the system's random source: the seed is never written anywhere
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// A split's examples in the order `order` gives (order[j] = index into `from`).
lra::Split permuted(const lra::Split& from, const std::vector<size_t>& order) {
  lra::Split out;
  out.offsets2 = {0};
  const bool paired = from.offsets2.size() > 1;
  for (size_t j : order) {
    out.tokens.insert(out.tokens.end(), from.tokens.begin() + from.offsets[j], from.tokens.begin() + from.offsets[j + 1]);
    out.offsets.push_back(static_cast<int64_t>(out.tokens.size()));
    if (paired) {
      out.tokens2.insert(out.tokens2.end(), from.tokens2.begin() + from.offsets2[j],
                         from.tokens2.begin() + from.offsets2[j + 1]);
      out.offsets2.push_back(static_cast<int64_t>(out.tokens2.size()));
    }
    out.labels.push_back(from.labels[j]);
  }
  return out;
}

// One confined run of `lrahost evaluate-run`; its output is kept in the
// maintainer's local log folder, never in reevaluation.json.
struct PassOutcome {
  SandboxOutcome outcome;
  fs::path log;
};

PassOutcome run_pass(const ReevaluateOptions& o, const std::vector<std::string>& argv, const fs::path& dir,
                     const std::vector<fs::path>& read_only, const fs::path& log) {
  SandboxLimits limits = o.limits;
  limits.gpu = o.device.rfind("cuda", 0) == 0;
  SandboxMounts mounts;
  mounts.read_only = read_only;
  PassOutcome p{run_in_sandbox(argv, dir, limits, mounts, o.sandbox), log};
  fs::create_directories(log.parent_path());
  write_file_atomic(log, p.outcome.log_tail);
  return p;
}

json describe_pass(const PassOutcome& p) { return {{"outcome", p.outcome.describe()}}; }

int64_t count_matches(const std::vector<int32_t>& predicted, const lra::Split& split, size_t begin, size_t end,
                      const std::vector<size_t>& order) {
  // predicted[j] is the prediction for the example order[j] of the combined set.
  int64_t correct = 0;
  for (size_t j = 0; j < predicted.size(); ++j)
    if (order[j] >= begin && order[j] < end) correct += predicted[j] == split.labels[order[j]];
  return correct;
}

// The sandbox's working folders: under /tmp, in a folder user nobody may
// traverse (mode 0711). bubblewrap, run as nobody for a root verifier, cannot
// reach a path under a folder only root may enter (mkdtemp's 0700, /root),
// which is where --out may well lie; what the sandbox reads is staged there.
fs::path make_sandbox_area() {
  std::string tmpl = "/tmp/lrahost-sandbox-XXXXXX";
  if (!mkdtemp(tmpl.data()))
    throw Error(ErrorKind::storage, "cannot create the sandbox's working folder " + tmpl + ": " + std::strerror(errno));
  fs::permissions(tmpl, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  return tmpl;
}

// A folder of the sandbox area everyone may read (the sandbox runs as nobody).
void make_readable_folder(const fs::path& dir) {
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
}

fs::path stage_readable(const fs::path& from, const fs::path& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  return to;
}

void reevaluate_one(const ReevaluateOptions& o, const OfficialLookup& official, const fs::path& run_dir,
                    const SubmittedPlugin& submitted, const fs::path& scratch, const fs::path& log_dir,
                    RunReevaluation& r) {
  auto fail = [&](std::string why) { r.reasons.push_back(std::move(why)); };
  // 1. The file's own checks (verify reads model.pt beside it as well).
  VerifyReport v = verify_result_file(r.result_file, official);
  if (!o.trusted_keys.empty()) require_trusted_signer(v, o.trusted_keys, o.trusted_keys_dir);
  for (const auto& why : v.reasons) fail("verify: " + why);
  if (!v.readable) return;
  json result;
  {
    std::ifstream in(r.result_file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    result = parse_json_input(ss.str());
  }
  r.report["result_digest"] = text_at(result, {"digest"});
  r.report["division"] = v.division;
  r.report["signed_by"] = v.signed_by.empty() ? json(nullptr) : json(v.signed_by);
  // 2. The weights and the plugin are the ones the result names.
  const std::string model_sha = text_at(result, {"model", "sha256"});
  if (model_sha.empty()) {
    fail("result.json records no model.sha256, so its model.pt cannot be tied to it (re-run with this lrahost)");
    return;
  }
  const std::string plugin_sha = bare_sha256(text_at(result, {"plugin", "sha256"}));
  if (submitted.sha256() != plugin_sha) {
    fail("the bundle's plugin for this run (" + submitted.shown() + ") is not the file the result names (plugin.sha256 " +
         plugin_sha + ")");
    return;
  }
  r.report["model_sha256"] = model_sha;
  r.report["plugin_sha256"] = plugin_sha;

  // 3. The recorded configuration, read through the manifest's own field
  //    table: the model the verifier counts is the model the run built.
  const std::string task_name = text_at(result, {"task", "name"});
  // A task is named, never a path: a name from the file must not make the
  // verifier load a library of the submitter's outside the sandbox.
  const auto tasks = available_plugin_names(LRA_KIND_TASK);
  if (std::find(tasks.begin(), tasks.end(), task_name) == tasks.end()) {
    fail("task.name " + json(task_name).dump() + " is not a task installed on this host");
    return;
  }
  const json* config_json = json_at(result, {"config"});
  const Manifest config = config_manifest(config_json ? *config_json : json(), task_name, r.result_file.string());
  // Data sizes are the released manifest's (or within the documented caps)
  // before a single example is generated (reevaluation/data_params_check.h).
  if (auto why = check_result_data_params(result)) {
    fail(*why + "; nothing was generated or loaded for it");
    return;
  }

  // 4. The official data, on the verifier's side: only label-free inputs go into the sandbox.
  const LoadedPlugin& task = open_plugin(task_name, LRA_KIND_TASK);
  const json* dp = json_at(result, {"task", "data_params"});
  const lra::Params run_params = params_from_json(dp ? *dp : json::object());
  const LoadedData data = load_task_data(task, run_params, data_root(o.data_dir), o.threads, true,
                                         r.result_file.string() + " task.data_params");
  const std::string recorded_fp = text_at(result, {"task", "data_fingerprint"});
  if (data.fingerprint != recorded_fp) {
    fail("the " + task_name + " data here (" + data.dataset.source + ", fingerprint " + data.fingerprint +
         ") are not the data the run used (task.data_fingerprint " + recorded_fp +
         "); pass --data-dir with those data to re-evaluate it");
    return;
  }
  const auto& info = data.dataset.info;

  // 5. The budget from the verifier's own reference Transformer, built from
  //    the recorded configuration (no number from the file); model.pt is
  //    counted against it once the fresh model exists (step 7).
  std::map<std::string, std::vector<int64_t>> host_buffers;
  ParamBudget budget;
  {
    BackboneSpec spec{config.model, info.vocab_size, info.num_classes, 0, info.paired};
    Classifier reference(spec, make_reference_attention);
    for (const auto& b : reference->named_buffers(true))
      if (b.key().find("mixer.") == std::string::npos) host_buffers[b.key()] = b.value().sizes().vec();
    budget = compute_param_budget(count_parameters(*reference), config.rules.param_budget_ratio);
    const json* ref_recorded = json_at(result, {"rules", "reference_params"});
    if (!ref_recorded || !ref_recorded->is_number_integer() || ref_recorded->get<int64_t>() != budget.reference)
      fail("rules.reference_params is " + (ref_recorded ? ref_recorded->dump() : std::string("missing")) +
           ", the reference Transformer of the recorded configuration has " + std::to_string(budget.reference) +
           " parameters");
  }

  // 6. One stream of inputs: the public test split and (generated tasks) a
  //    private set drawn from a secret seed, interleaved in a secret order, so
  //    the sandboxed code cannot tell them apart.
  fs::create_directories(scratch);
  const lra::Split& test = data.dataset.test;
  const size_t n = test.size();
  lra::Split all = test;
  size_t n_private = 0;
  const int64_t want_private = o.private_examples > 0 ? o.private_examples : static_cast<int64_t>(n);
  std::mt19937_64 secret(secret_seed(o.private_seed));
  if (auto params = private_set_params(data.params, secret(), want_private)) {
    const lra::Split priv = draw_private_set(task, *params, scratch / "private-data", o.threads);
    fs::remove_all(scratch / "private-data");  // the examples stay only in memory and as label-free inputs
    append_split(all, priv);
    n_private = priv.size();
  }
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), secret);
  const json task_info = {{"vocab_size", info.vocab_size}, {"num_classes", info.num_classes},
                          {"natural_len", info.natural_len}, {"paired", info.paired}};

  // 7. The submitted code, confined: first it builds the freshly initialised
  //    model (the run's seed); then the same command, in the same folder,
  //    predicts once with the submitted weights and once with the fresh ones,
  //    in a secret order: the two passes differ only in model.pt's bytes.
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  make_readable_folder(scratch);
  make_readable_folder(scratch / "submitted" / "run");
  stage_readable(r.result_file, scratch / "submitted" / "run" / kResultFileName);
  const fs::path submitted_model = stage_readable(run_dir / "model.pt", scratch / "submitted" / "run" / "model.pt");
  // A Python mixer's folder is staged whole; the passes bind it, and the host's Python plugin, read-only.
  const StagedPlugin plugin = stage_plugin(submitted, scratch / "submitted");
  const fs::path init_dir = scratch / "init";
  fs::create_directories(init_dir);
  write_file_atomic(init_dir / "task-info.json", task_info.dump());
  json passes = json::object();
  std::vector<std::string> init_argv = {
      exe, "evaluate-run", "--init-weights", "--run", (scratch / "submitted" / "run").string(), "--plugin",
      plugin.spec, "--task-info", (init_dir / "task-info.json").string(), "--out", (init_dir / "fresh.pt").string(),
      "--groups", (init_dir / "groups.json").string(), "--summary", (init_dir / "summary.txt").string(),
      "--threads", std::to_string(o.threads)};
  // Only this pass reports on the interpreter: it sees no test inputs (python_report.h).
  if (submitted.python) init_argv.insert(init_argv.end(), {"--python-report", (init_dir / kPythonReportName).string()});
  std::vector<fs::path> init_binds = plugin.extra;
  init_binds.push_back(scratch / "submitted");
  const PassOutcome init = run_pass(o, init_argv, init_dir, init_binds, log_dir / (r.run + "-init.log"));
  passes["init"] = describe_pass(init);
  r.report["sandbox"] = {{"bubblewrap", o.sandbox},
                         {"memory_limit_bytes", o.limits.memory_bytes},
                         {"time_limit_seconds", o.limits.timeout_seconds},
                         {"passes", passes}};
  // Which torch the submission's Python ran with and which the sandbox's has, said with any failure.
  std::string torch_note;
  if (submitted.python) {
    PythonRunCheck py = check_python_report(init_dir / kPythonReportName, result,
                                            {{plugin.staged.string(), submitted.python->folder()},
                                             {scratch.string(), "<sandbox>"}});
    r.report["python"] = py.report;
    for (auto& f : py.facts) r.facts.push_back(std::move(f));
    torch_note = py.torch_note.empty() ? "" : "; note: " + py.torch_note;
    if (init.outcome.exit_code != 0) {
      fail("the Python mixer could not build its freshly initialised model in the sandbox (" +
           init.outcome.describe() + (py.problem.empty() ? "" : ": " + py.problem) + torch_note +
           "; its output is kept, unpublished, in logs/" + init.log.filename().string() + " of --out)");
      return;
    }
    if (!py.torch_note.empty()) r.facts.push_back("Python mixer: " + py.torch_note);
  }
  if (init.outcome.exit_code != 0) {
    fail("the plugin could not build its freshly initialised model in the sandbox (" + init.outcome.describe() +
         "; its output is kept, unpublished, in logs/" + init.log.filename().string() + " of --out)");
    return;
  }
  const uint64_t model_bytes = fs::file_size(run_dir / "model.pt");
  const fs::path fresh_model = scratch / "fresh-model.pt";
  try {
    write_file_atomic(fresh_model, read_untrusted_file(init_dir / "fresh.pt", 2 * model_bytes + (1u << 20)));
    const ModelFileCount count =
        count_trained_values(read_model_file(run_dir / "model.pt"), read_model_file(fresh_model), host_buffers);
    if (count.counted > budget.budget)
      fail("model.pt holds " + std::to_string(count.counted) + " trained values (parameters and mixer buffers that "
           "differ from their initial values), over the parameter budget " + std::to_string(budget.budget) + " (" +
           manifest_detail::fmt_double(config.rules.param_budget_ratio) + " x the reference Transformer's " +
           std::to_string(budget.reference) + ")");
    r.facts.push_back("parameters counted from model.pt: " + std::to_string(count.counted) + " trained values (budget " +
                      std::to_string(budget.budget) + "; " + std::to_string(count.unchanged) +
                      " fixed values as initialised, " + std::to_string(count.host_buffers) +
                      " in the backbone's position table)");
    r.report["parameters"] = {{"counted", count.counted}, {"unchanged", count.unchanged},
                              {"host_buffers", count.host_buffers}, {"budget", budget.budget},
                              {"reference", budget.reference}};
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::storage) throw;
    fail(std::string("the freshly initialised model from the sandbox is unusable: ") + e.what());
    return;
  }
  // The optimizer groups the result records are the ones the plugin's own
  // hints give for this model (train/optimizer_groups.h), recomputed there.
  if (const json* recorded = json_at(result, {"optimizer"}); recorded && !recorded->is_null()) {
    try {
      const json computed = parse_json_input(read_untrusted_file(init_dir / "groups.json", 1u << 22));
      if (computed != *recorded)
        fail("optimizer in result.json is not what the plugin's optimizer hints give for this model: recorded " +
             recorded->dump() + ", the plugin gives " + computed.dump());
      else
        r.facts.push_back("optimizer groups recomputed from the plugin's hints: " +
                          std::to_string(computed.value("groups", json::array()).size()) + ", as recorded");
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::storage) throw;
      fail(std::string("the optimizer groups from the sandbox are unusable: ") + e.what());
    }
  }
  // The summary position is the one the host's probe gives this plugin, run
  // in the sandbox as the run built it: a file cannot move the summary of a
  // mixer that reads ahead (docs/rules.md#causal-mixers-and-the-summary-token).
  if (const json* recorded = json_at(result, {"model", "summary"}); recorded && recorded->is_string()) {
    try {
      const std::string probed = read_untrusted_file(init_dir / "summary.txt", 64);
      if (!summary_position_from_name(probed))
        fail("the summary position from the sandbox is not a known one");
      else if (probed != recorded->get<std::string>())
        fail("model.summary is " + recorded->dump() + ", but the host's probe of the plugin, built in the sandbox as "
             "the run built it, gives \"" + probed + "\" (docs/rules.md#causal-mixers-and-the-summary-token)");
      else
        r.facts.push_back("summary position probed in the sandbox: " + probed + ", as recorded");
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::storage) throw;
      fail(std::string("the summary position from the sandbox is unusable: ") + e.what());
    }
  }
  fs::remove_all(init_dir);

  const fs::path eval_dir = scratch / "eval";
  const std::vector<std::string> predict_argv = {
      exe, "evaluate-run", "--run", (eval_dir / "run").string(), "--plugin", plugin.spec, "--task-info",
      (eval_dir / "task-info.json").string(), "--inputs", (eval_dir / "inputs").string(), "--out",
      (eval_dir / "predictions").string(), "--device", o.device, "--threads", std::to_string(o.threads)};
  const lra::Split shuffled = permuted(all, order);
  auto predict_with = [&](const fs::path& weights, const std::string& name) -> std::optional<std::vector<int32_t>> {
    fs::remove_all(eval_dir);
    make_readable_folder(eval_dir / "run");
    stage_readable(r.result_file, eval_dir / "run" / kResultFileName);
    stage_readable(weights, eval_dir / "run" / "model.pt");
    write_file_atomic(eval_dir / "task-info.json", task_info.dump());
    write_inputs_file(eval_dir / "inputs", shuffled);
    std::vector<fs::path> binds = plugin.extra;
    binds.push_back(plugin.staged);
    const PassOutcome p = run_pass(o, predict_argv, eval_dir, binds, log_dir / (r.run + "-" + name + ".log"));
    passes[name] = describe_pass(p);
    std::optional<std::vector<int32_t>> out;
    if (p.outcome.exit_code != 0) {
      fail("the plugin's evaluation in the sandbox failed (" + p.outcome.describe() + torch_note +
           "; its output is kept, unpublished, in logs/" + p.log.filename().string() + " of --out)");
    } else {
      try {
        out = parse_predictions(read_untrusted_file(eval_dir / "predictions", predictions_file_size(all.size())),
                                all.size(), info.num_classes);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::storage) throw;
        fail(e.what());
      }
    }
    fs::remove_all(eval_dir);
    return out;
  };
  std::optional<std::vector<int32_t>> trained, fresh;
  if (secret() & 1) {
    trained = predict_with(submitted_model, "trained");
    fresh = predict_with(fresh_model, "fresh");
  } else {
    fresh = predict_with(fresh_model, "fresh");
    trained = predict_with(submitted_model, "trained");
  }
  r.report["sandbox"]["passes"] = passes;
  if (!trained || !fresh) return;

  // 8. The verifier's own accuracy against the recorded one.
  const std::string device = describe_device(pick_device(o.device));
  const bool cuda = o.device.rfind("cuda", 0) == 0;
  const std::string precision =
      cuda && text_at(result, {"timing", "precision"}) == "bfloat16 autocast" ? "bfloat16 autocast" : "float32";
  const int64_t nn = static_cast<int64_t>(n);
  const int64_t correct = count_matches(*trained, all, 0, n, order);
  const double recomputed = static_cast<double>(correct) / static_cast<double>(nn);
  const json* acc = json_at(result, {"metrics", "test_accuracy"});
  const double recorded = acc && acc->is_number() ? acc->get<double>() : -1;
  const json* examples = json_at(result, {"task", "examples", "test"});
  if (!examples || !examples->is_number_integer() || examples->get<int64_t>() != nn)
    fail("task.examples.test is " + (examples ? examples->dump() : std::string("missing")) + ", the test split has " +
         std::to_string(n) + " examples");
  const bool same_setting = device == text_at(result, {"timing", "device"}) &&
                            precision == text_at(result, {"timing", "precision"});
  const int64_t recorded_correct = std::llround(recorded * static_cast<double>(nn));
  r.facts.push_back("test accuracy recomputed " + percent(recomputed) + " (" + std::to_string(correct) + "/" +
                    std::to_string(n) + ") on " + device + ", " + precision + "; recorded " + percent(recorded) +
                    (same_setting ? " on the same device and precision" : " on " + text_at(result, {"timing", "device"}) +
                                                                               ", " + text_at(result, {"timing", "precision"})));
  if (same_setting ? correct != recorded_correct : std::abs(recomputed - recorded) > o.tolerance + 1e-12) {
    fail("metrics.test_accuracy is " + percent(recorded) + ", the submitted model scores " + percent(recomputed) +
         " on the official test split" +
         (same_setting ? " (same device and precision: must be identical)"
                       : " (different device or precision: allowed difference " + percent(o.tolerance) + ")"));
  }
  r.report["test"] = {{"recorded_accuracy", recorded}, {"recomputed_accuracy", recomputed}, {"correct", correct},
                      {"examples", nn}, {"device", device}, {"precision", precision},
                      {"same_device_and_precision", same_setting},
                      {"tolerance", same_setting ? 0.0 : o.tolerance}};

  // 9. The private set.
  if (n_private > 0) {
    const int64_t pn = static_cast<int64_t>(n_private);
    const int64_t pc = count_matches(*trained, all, n, all.size(), order);
    const ProportionTest t = two_proportion_test(correct, nn, pc, pn);
    char line[256];
    std::snprintf(line, sizeof line,
                  "private test set: %s (%lld/%lld, secret seed, interleaved with the public split); public minus "
                  "private %+.2f points, z = %.2f, one-sided p = %.3g",
                  percent(t.p2).c_str(), static_cast<long long>(pc), static_cast<long long>(pn), 100 * t.gap, t.z,
                  t.p_value);
    r.facts.push_back(line);
    const bool flagged = t.p_value < o.significance;
    if (flagged) {
      char why[320];
      std::snprintf(why, sizeof why,
                    "the public test accuracy %s is above the private test set's %s by %.2f points (one-sided "
                    "two-proportion z-test p = %.3g < %.3g): the model was likely trained or selected on the public "
                    "test split",
                    percent(t.p1).c_str(), percent(t.p2).c_str(), 100 * t.gap, t.p_value, o.significance);
      fail(why);
    }
    r.report["private"] = {{"examples", pn}, {"correct", pc}, {"accuracy", t.p2}, {"gap", t.gap}, {"z", t.z},
                           {"p_value", t.p_value}, {"significance", o.significance}, {"flagged", flagged},
                           {"seed", "secret (not recorded)"}};
  } else {
    r.report["private"] = nullptr;
    r.facts.push_back("private test set: none (" + task_name + " data are downloaded, not generated)");
  }

  // 10. The predictions must come from the submitted weights: with freshly
  //     initialised ones, the same code must not beat the majority class.
  {
    std::map<int32_t, int64_t> per_class;
    for (int32_t label : all.labels) ++per_class[label];
    int64_t majority = 0;
    for (const auto& [label, count] : per_class) majority = std::max(majority, count);
    const int64_t total = static_cast<int64_t>(all.size());
    const double rate = static_cast<double>(majority) / static_cast<double>(total);
    const int64_t fc = count_matches(*fresh, all, 0, all.size(), order);
    const ProportionTest t = above_rate_test(fc, total, rate);
    const bool flagged = t.p_value < o.significance;
    char line[256];
    std::snprintf(line, sizeof line,
                  "freshly initialised weights: %s (%lld/%lld) against the majority-class rate %s, one-sided p = %.3g",
                  percent(t.p1).c_str(), static_cast<long long>(fc), static_cast<long long>(total),
                  percent(rate).c_str(), t.p_value);
    r.facts.push_back(line);
    if (flagged) {
      char why[320];
      std::snprintf(why, sizeof why,
                    "predictions do not depend on the trained weights: with freshly initialised weights the plugin "
                    "scores %s, above the majority-class rate %s (one-sided binomial p = %.3g < %.3g)",
                    percent(t.p1).c_str(), percent(rate).c_str(), t.p_value, o.significance);
      fail(why);
    }
    r.report["fresh_weights"] = {{"examples", total}, {"correct", fc}, {"accuracy", t.p1},
                                 {"majority_class_rate", rate}, {"p_value", t.p_value},
                                 {"significance", o.significance}, {"flagged", flagged}};
  }
}

}  // namespace

std::vector<RunReevaluation> reevaluate_bundle(const ReevaluateOptions& o, const OfficialLookup& official) {
  if (o.sandbox) {
    if (auto why = sandbox_unavailable())
      throw Error(ErrorKind::usage, "cannot re-evaluate safely: " + *why +
                                        ". Submitted plugin code only runs inside the sandbox; pass --no-sandbox to "
                                        "run it unconfined on a machine you can afford to lose");
  }
  const json index = extract_bundle(o.bundle, o.out);
  const json* runs = json_at(index, {"runs"});
  if (!runs || !runs->is_array() || runs->empty())
    throw Error(ErrorKind::data, "bundle " + o.bundle.string() + ": bundle.json lists no runs");
  std::vector<RunReevaluation> out;
  struct Area {  // removed however this ends
    fs::path path = make_sandbox_area();
    ~Area() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } sandbox_area;
  const fs::path& area = sandbox_area.path;
  for (const auto& entry : *runs) {
    RunReevaluation r;
    r.run = entry.value("dir", std::string());
    const auto submitted = submitted_plugin(o.out, entry.value("plugin", std::string()));
    if (!is_allowed_bundle_name("runs/" + r.run + "/result.json") || !submitted ||
        !fs::is_regular_file(o.out / "runs" / r.run / "result.json"))
      throw Error(ErrorKind::data, "bundle " + o.bundle.string() + ": bundle.json run entry " + entry.dump() +
                                       " does not name a run folder and plugin the bundle holds");
    const fs::path run_dir = o.out / "runs" / r.run;
    r.result_file = run_dir / kResultFileName;
    r.report = {{"schema", kReevaluationSchema},
                {"run", r.run},
                {"bundle", o.bundle.filename().string()},
                {"verifier", {{"version", build_info().version}, {"git_revision", build_info().git_revision}}},
                {"checked_at", utc_now()}};
    try {
      reevaluate_one(o, official, fs::absolute(run_dir), *submitted, area / r.run, fs::absolute(o.out / "logs"), r);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::storage || e.kind() == ErrorKind::memory) throw;
      r.reasons.push_back(std::string("cannot re-evaluate: ") + e.what());
    }
    r.valid = r.reasons.empty();
    r.report["valid"] = r.valid;
    r.report["reasons"] = r.reasons;
    r.report["facts"] = r.facts;
    r.report = seal_reevaluation(std::move(r.report), o.sign_key.get());
    write_file_atomic(run_dir / kReevaluationFileName,
                      r.report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    std::error_code ec;
    fs::remove_all(area / r.run, ec);  // the next run starts with the space this one used
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace lra::host
