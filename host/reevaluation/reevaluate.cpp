#include "reevaluation/reevaluate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>

#include "common/utc_time.h"
#include "common/atomic_file.h"
#include "common/build_info.h"
#include "common/json_input.h"
#include "common/sha256.h"
#include "data/task_data.h"
#include "lra/status.h"
#include "plugins/loader.h"
#include "reevaluation/bundle.h"
#include "reevaluation/inputs_file.h"
#include "reevaluation/private_set.h"
#include "reevaluation/reevaluation_signature.h"
#include "results/result.h"
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

int64_t count_correct(const json& predictions, const lra::Split& split, const std::string& which) {
  if (!predictions.is_array() || predictions.size() != split.size())
    throw Error(ErrorKind::plugin, "the sandboxed evaluation returned " +
                                       std::to_string(predictions.is_array() ? predictions.size() : 0) +
                                       " predictions for the " + std::to_string(split.size()) + " examples of the " +
                                       which);
  int64_t correct = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    if (!predictions[i].is_number_integer()) throw Error(ErrorKind::plugin, "a prediction is not a class index");
    correct += predictions[i].get<int64_t>() == split.labels[i];
  }
  return correct;
}

void reevaluate_one(const ReevaluateOptions& o, const OfficialLookup& official, const fs::path& run_dir,
                    const fs::path& plugin_file, const fs::path& scratch, RunReevaluation& r) {
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
  if (plugin_file.stem().string() != plugin_sha) {
    fail("the bundle's plugin for this run (" + plugin_file.filename().string() + ") is not the file the result names (plugin.sha256 " +
         plugin_sha + ")");
    return;
  }
  r.report["model_sha256"] = model_sha;
  r.report["plugin_sha256"] = plugin_sha;

  // 3. The official data, on the verifier's side: only the inputs go into the sandbox.
  const std::string task_name = text_at(result, {"task", "name"});
  // A task is named, never a path: a name from the file must not make the
  // verifier load a library of the submitter's outside the sandbox.
  const auto tasks = available_plugin_names(LRA_KIND_TASK);
  if (std::find(tasks.begin(), tasks.end(), task_name) == tasks.end()) {
    fail("task.name " + json(task_name).dump() + " is not a task installed on this host");
    return;
  }
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
  fs::create_directories(scratch);
  const lra::Split& test = data.dataset.test;
  write_inputs_file(scratch / "public.inputs", test);
  std::optional<lra::Split> priv;
  const int64_t n_private = o.private_examples > 0 ? o.private_examples : static_cast<int64_t>(test.size());
  if (auto params = private_set_params(data.params, secret_seed(o.private_seed), n_private)) {
    priv = draw_private_set(task, *params, scratch / "private-data", o.threads);
    fs::remove_all(scratch / "private-data");  // the examples stay only in memory and as label-free inputs
    write_inputs_file(scratch / "private.inputs", *priv);
  }
  const auto& info = data.dataset.info;
  write_file_atomic(scratch / "task-info.json", json{{"vocab_size", info.vocab_size},
                                                     {"num_classes", info.num_classes},
                                                     {"natural_len", info.natural_len},
                                                     {"paired", info.paired}}.dump());

  // 4. The submitted code predicts, confined.
  std::vector<std::string> argv = {fs::read_symlink("/proc/self/exe").string(), "evaluate-run",
                                   "--run", run_dir.string(), "--plugin", plugin_file.string(),
                                   "--task-info", (scratch / "task-info.json").string(),
                                   "--inputs", (scratch / "public.inputs").string()};
  if (priv) argv.insert(argv.end(), {"--inputs", (scratch / "private.inputs").string()});
  argv.insert(argv.end(), {"--out", (scratch / "predictions.json").string(), "--device", o.device, "--threads",
                           std::to_string(o.threads)});
  SandboxLimits limits = o.limits;
  limits.gpu = o.device.rfind("cuda", 0) == 0;
  const SandboxOutcome outcome = run_in_sandbox(argv, scratch, limits, o.sandbox);
  r.report["sandbox"] = {{"bubblewrap", o.sandbox},
                         {"memory_limit_bytes", limits.memory_bytes},
                         {"time_limit_seconds", limits.timeout_seconds},
                         {"outcome", outcome.describe()},
                         {"log_tail", outcome.log_tail}};
  if (outcome.exit_code != 0) {
    fail("the plugin's evaluation in the sandbox failed (" + outcome.describe() + "): " + outcome.log_tail);
    return;
  }
  json predictions;
  {
    std::ifstream in(scratch / "predictions.json", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      predictions = parse_json_input(ss.str());
    } catch (const JsonInputError& e) {
      fail(std::string("the sandboxed evaluation wrote no readable predictions: ") + e.what());
      return;
    }
  }
  const json* sets = json_at(predictions, {"sets"});
  if (!sets || !sets->is_array() || sets->size() != (priv ? 2u : 1u)) {
    fail("the sandboxed evaluation wrote predictions for the wrong number of sets");
    return;
  }
  const std::string device = text_at(predictions, {"device"});
  const std::string precision = text_at(predictions, {"precision"});

  // 5. The verifier's own accuracy against the recorded one.
  const int64_t n = static_cast<int64_t>(test.size());
  const int64_t correct = count_correct((*sets)[0].value("predictions", json()), test, "public test split");
  const double recomputed = static_cast<double>(correct) / static_cast<double>(n);
  const json* acc = json_at(result, {"metrics", "test_accuracy"});
  const double recorded = acc && acc->is_number() ? acc->get<double>() : -1;
  const json* examples = json_at(result, {"task", "examples", "test"});
  if (!examples || !examples->is_number_integer() || examples->get<int64_t>() != n)
    fail("task.examples.test is " + (examples ? examples->dump() : std::string("missing")) + ", the test split has " +
         std::to_string(n) + " examples");
  const bool same_setting = device == text_at(result, {"timing", "device"}) &&
                            precision == text_at(result, {"timing", "precision"});
  const int64_t recorded_correct = std::llround(recorded * static_cast<double>(n));
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
                      {"examples", n}, {"device", device}, {"precision", precision},
                      {"same_device_and_precision", same_setting},
                      {"tolerance", same_setting ? 0.0 : o.tolerance}};

  // 6. The private set.
  if (priv) {
    const int64_t pn = static_cast<int64_t>(priv->size());
    const int64_t pc = count_correct((*sets)[1].value("predictions", json()), *priv, "private test set");
    const ProportionTest t = two_proportion_test(correct, n, pc, pn);
    char line[256];
    std::snprintf(line, sizeof line,
                  "private test set: %s (%lld/%lld, secret seed); public minus private %+.2f points, z = %.2f, "
                  "one-sided p = %.3g",
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
  for (const auto& entry : *runs) {
    RunReevaluation r;
    r.run = entry.value("dir", std::string());
    const std::string plugin = entry.value("plugin", std::string());
    if (!is_allowed_bundle_name("runs/" + r.run + "/result.json") || !is_allowed_bundle_name(plugin) ||
        plugin.rfind("plugins/", 0) != 0 || !fs::is_regular_file(o.out / "runs" / r.run / "result.json") ||
        !fs::is_regular_file(o.out / plugin))
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
      reevaluate_one(o, official, fs::absolute(run_dir), fs::absolute(o.out / plugin),
                     fs::absolute(o.out / "scratch" / r.run), r);
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
    out.push_back(std::move(r));
  }
  std::error_code ec;
  fs::remove_all(o.out / "scratch", ec);
  return out;
}

}  // namespace lra::host
