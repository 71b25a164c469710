#include "reevaluation/reevaluate_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include "common/json_input.h"
#include "common/sha256.h"
#include "common/text.h"
#include "data/task_data.h"
#include "device/device.h"
#include "manifest/manifest.h"
#include "model/backbone.h"
#include "plugins/loader.h"
#include "reevaluation/data_params_check.h"
#include "common/atomic_file.h"
#include "reevaluation/isolated_evaluation.h"
#include "isolation/readable_copy.h"
#include "reevaluation/run_code.h"
#include "reevaluation/private_set.h"
#include "reevaluation/sequence_scoring.h"
#include "results/result.h"
#include "results/signature.h"
#include "train/batches.h"
#include "reevaluation/pretraining_evidence.h"
#include "reevaluation/verifier_setting.h"
#include "train/trainer.h"
#include "manifest/manifest_text.h"
#include "reevaluation/submitted_plugin.h"
#include "reevaluation/reevaluate_run.h"
#include "rules/rules.h"
#include "results/run_record.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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
    if (!from.labels.empty()) out.labels.push_back(from.labels[j]);  // a sequence task has none
  }
  return out;
}

int64_t count_matches(const std::vector<int32_t>& predicted, const lra::Split& split, size_t begin, size_t end,
                      const std::vector<size_t>& order) {
  // predicted[j] is the prediction for the example order[j] of the combined set.
  int64_t correct = 0;
  for (size_t j = 0; j < predicted.size(); ++j)
    if (order[j] >= begin && order[j] < end) correct += predicted[j] == split.labels[order[j]];
  return correct;
}



// The confined process of one run's mixers: the submitted plugin staged
// readable for user nobody, an empty scratch folder, the run's time limits.
MixerProcessOptions mixer_process_options(const RunContext& ctx, const SubmittedPlugin& judged) {
  const ReevaluateOptions& o = ctx.o;
  make_readable_folder(ctx.scratch);
  make_readable_folder(ctx.scratch / "plugin");
  // A Python mixer's folder is staged whole; the process binds it, and the host's Python plugin, read-only.
  const StagedPlugin plugin = stage_plugin(judged, ctx.scratch / "plugin");
  fs::create_directories(ctx.scratch / "mixer");
  MixerProcessOptions p;
  p.exe = fs::read_symlink("/proc/self/exe").string();
  p.plugin = plugin.spec;
  p.read_only = plugin.extra;
  p.read_only.push_back(plugin.staged);
  p.scratch = ctx.scratch / "mixer";
  p.limits = o.limits;
  p.limits.timeout_seconds = ctx.time_limit_seconds;
  p.limits.gpu = o.device.rfind("cuda", 0) == 0;
  p.sandboxed = o.sandbox;
  p.device = o.device;
  p.threads = o.threads;
  p.call_timeout_seconds = std::min(o.call_timeout_seconds, ctx.time_limit_seconds);
  return p;
}

}  // namespace

void reevaluate_run(const RunContext& ctx, RunReevaluation& r) {
  const ReevaluateOptions& o = ctx.o;
  const fs::path& run_dir = ctx.run_dir;
  const SubmittedPlugin& submitted = ctx.submitted;
  auto fail = [&](std::string why) { r.reasons.push_back(std::move(why)); };
  // 1. The file's own checks (verify reads model.pt beside it as well).
  VerifyReport v = verify_result_file(r.result_file, ctx.official);
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
  r.report["result_digest"] = json_text_at(result, {"digest"});
  r.report["division"] = v.division;
  r.report["signed_by"] = v.signed_by.empty() ? json(nullptr) : json(v.signed_by);
  // 2. The weights and the plugin are the ones the result names.
  const std::string model_sha = json_text_at(result, {"model", "sha256"});
  if (model_sha.empty()) {
    fail("result.json records no model.sha256, so its model.pt cannot be tied to it (re-run with this lrahost)");
    return;
  }
  const std::string plugin_sha = bare_sha256(json_text_at(result, {"plugin", "sha256"}));
  if (submitted.sha256() != plugin_sha) {
    fail("the bundle's plugin for this run (" + submitted.shown() + ") is not the file the result names (plugin.sha256 " +
         plugin_sha + ")");
    return;
  }
  r.report["model_sha256"] = model_sha;
  r.report["plugin_sha256"] = plugin_sha;
  SubmittedPlugin judged;
  bool same_build = true;
  if (!choose_run_code(ctx, result, v.division, r, judged, same_build)) return;

  // 3. The recorded configuration, read through the manifest's own field
  //    table: the model the verifier counts is the model the run built.
  const std::string task_name = json_text_at(result, {"task", "name"});
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

  // The mixer process starts now and loads LibTorch while the verifier
  // prepares the data; it runs host code only until step 7 asks it to open
  // the plugin. Its output goes to the maintainer's local log however this ends.
  MixerProcess process(mixer_process_options(ctx, judged));
  struct Log {
    MixerProcess& p;
    fs::path file;
    ~Log() {
      std::error_code ec;
      fs::create_directories(file.parent_path(), ec);
      try {
        write_file_atomic(file, p.log_tail());
      } catch (const Error&) {
      }
    }
  } log{process, ctx.log_dir / (r.run + "-mixer.log")};

  // 4. The official data, on the verifier's side; they never leave it.
  const LoadedPlugin& task = open_plugin(task_name, LRA_KIND_TASK);
  const json* dp = json_at(result, {"task", "data_params"});
  const lra::Params run_params = params_from_json(dp ? *dp : json::object());
  const LoadedData data = load_task_data(task, run_params, data_root(o.data_dir), o.threads, true,
                                         r.result_file.string() + " task.data_params");
  const std::string recorded_fp = json_text_at(result, {"task", "data_fingerprint"});
  if (data.fingerprint != recorded_fp) {
    // Which splits differ, where the result records each one's fingerprint.
    std::string splits;
    for (const auto& [name, here] : data.split_fingerprints) {
      const std::string recorded = json_text_at(result, {"task", "split_fingerprints", name.c_str()});
      if (!recorded.empty() && recorded != here)
        splits += (splits.empty() ? "" : "; ") + std::string("the ") + name + " split differs (" + here +
                  " here, task.split_fingerprints." + name + " " + recorded + ")";
    }
    fail("the " + task_name + " data here (" + data.dataset.source + ", fingerprint " + data.fingerprint +
         ") are not the data the run used (task.data_fingerprint " + recorded_fp + ")" +
         (splits.empty() ? std::string() : ": " + splits) + "; pass --data-dir with those data to re-evaluate it");
    return;
  }
  const auto& info = data.dataset.info;
  // A sequence task (SDK 1.4) is scored per position, against the verifier's targets.
  const bool sequence = data.dataset.is_sequence_task();
  // A self-pretrained run: its pretraining's data and weights, and what the
  // replay of its fine-tuning's first updates reads (step 7).
  std::optional<FineTuningReplayInput> replay;
  if (const json* phase = json_at(result, {"pretraining"}))
    replay = check_pretraining_evidence(*phase, result, config, data.dataset, o, r);

  // 5. The budget from the verifier's own reference Transformer, built from
  //    the recorded configuration (no number from the file); model.pt is
  //    counted against it once the fresh model exists (step 7).
  std::map<std::string, std::vector<int64_t>> host_buffers;
  ParamBudget budget;
  {
    const BackboneSpec spec = sequence ? backbone_spec(config.model, data.dataset, 0)
                                       : BackboneSpec{config.model, info.vocab_size, info.num_classes, 0, info.paired};
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
  fs::create_directories(ctx.scratch);
  const lra::Split& test = data.dataset.test;
  const size_t n = test.size();
  lra::Split all = test;
  lra::SplitTargets all_targets = sequence ? data.dataset.sequence.test : lra::SplitTargets{};
  size_t n_private = 0;
  const int64_t want_private = o.private_examples > 0 ? o.private_examples : static_cast<int64_t>(n);
  std::mt19937_64 secret(secret_seed(o.private_seed));
  if (auto params = private_set_params(data.params, secret(), want_private, sequence)) {
    if (sequence) {  // drawn in memory: the test grid's cells at the secret seed
      auto [priv, priv_targets] = draw_private_test_split(task, *params, o.threads);
      append_split(all, priv);
      append_targets(all_targets, priv_targets);
      n_private = priv.size();
    } else {
      const lra::Split priv = draw_private_set(task, *params, ctx.scratch / "private-data", o.threads);
      fs::remove_all(ctx.scratch / "private-data");  // the examples stay only in memory and as label-free inputs
      append_split(all, priv);
      n_private = priv.size();
    }
  }
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), secret);
  const lra::Split shuffled = permuted(all, order);
  const lra::SplitTargets shuffled_targets = sequence ? permuted_targets(all_targets, all, order) : lra::SplitTargets{};

  // 7. The model, built and run by the verifier with its mixers in the
  //    confined mixer process (reevaluation/isolated_evaluation.h): the
  //    submitted code sees its own tensors and the mixer inputs, never a
  //    file of the run. The two passes differ only in the mixers' tensors.
  const RunRecord run = read_run_record(run_dir);
  const IsolatedEvaluationInput in{run,          config, info,   shuffled,
                                   host_buffers, budget, (secret() & 1) != 0, &data.dataset,
                                   replay,       sequence ? &shuffled_targets : nullptr};
  r.report["sandbox"] = {{"bubblewrap", o.sandbox},
                         {"memory_limit_bytes", o.limits.memory_bytes},
                         {"time_limit_seconds", ctx.time_limit_seconds},
                         {"call_time_limit_seconds", process.options().call_timeout_seconds}};
  if (submitted.python) {
    const json* files = json_at(result, {"plugin", "source", "files"});
    r.facts.push_back("Python mixer: plugin.sha256 is that of the " +
                      std::to_string(files && files->is_object() ? files->size() : 0) +
                      " bundled source file(s), checked when the bundle was unpacked");
    r.facts.push_back("Python mixer: the run used Python " + text::visible_text(json_text_at(result, {"plugin", "source", "python"}).substr(0, 32)) +
                      ", torch " + text::visible_text(json_text_at(result, {"plugin", "source", "torch"}).substr(0, 32)) + " (plugin.source)");
  }
  IsolatedEvaluation eval = evaluate_isolated(in, process, o, r);
  eval.isolation["start_wait_seconds"] = process.open_seconds();
  if (!eval.parameters.is_null()) r.report["parameters"] = eval.parameters;
  if (!eval.isolation.is_null()) r.report["isolation"] = eval.isolation;
  if (!eval.fine_tuning_start.is_null()) r.report["fine_tuning_start"] = eval.fine_tuning_start;
  if (!eval.state_size.is_null()) r.report["state_size"] = eval.state_size;
  if (sequence) {  // steps 8-10 per scored position (reevaluation/sequence_scoring.h)
    if (!eval.trained_positions || !eval.fresh_positions) return;
    const VerifierSetting setting = verifier_setting(o, result);
    judge_sequence_passes({*eval.trained_positions, *eval.fresh_positions, order, n,
                           majority_target_rate(all_targets, data.dataset.sequence.num_classes)},
                          {o.tolerance, o.significance, setting.same_as_run, setting.same_as_run && same_build,
                           setting.device, setting.precision},
                          result, r);
    return;
  }
  if (!eval.trained || !eval.fresh) return;
  const std::vector<int32_t>& trained = *eval.trained;
  const std::vector<int32_t>& fresh = *eval.fresh;

  // 8. The verifier's own accuracy against the recorded one.
  const VerifierSetting setting = verifier_setting(o, result);
  const std::string& device = setting.device;
  const std::string& precision = setting.precision;
  const int64_t nn = static_cast<int64_t>(n);
  const int64_t correct = count_matches(trained, all, 0, n, order);
  const double recomputed = static_cast<double>(correct) / static_cast<double>(nn);
  const json* acc = json_at(result, {"metrics", "test_accuracy"});
  const double recorded = acc && acc->is_number() ? acc->get<double>() : -1;
  const json* examples = json_at(result, {"task", "examples", "test"});
  if (!examples || !examples->is_number_integer() || examples->get<int64_t>() != nn)
    fail("task.examples.test is " + (examples ? examples->dump() : std::string("missing")) + ", the test split has " +
         std::to_string(n) + " examples");
  const bool same_device = setting.same_as_run;
  const bool same_setting = same_device && same_build;
  const int64_t recorded_correct = std::llround(recorded * static_cast<double>(nn));
  r.facts.push_back("test accuracy recomputed " + percent(recomputed) + " (" + std::to_string(correct) + "/" +
                    std::to_string(n) + ") on " + device + ", " + precision + "; recorded " + percent(recorded) +
                    (same_device ? " on the same device and precision"
                                 : " on " + json_text_at(result, {"timing", "device"}) + ", " +
                                       json_text_at(result, {"timing", "precision"}) + kernels_difference(setting, result)));
  if (same_setting ? correct != recorded_correct : std::abs(recomputed - recorded) > o.tolerance + 1e-12) {
    fail("metrics.test_accuracy is " + percent(recorded) + ", the submitted model scores " + percent(recomputed) +
         " on the official test split" + accuracy_rule_words(same_setting, same_device, o.tolerance));
  }
  // The device is the verifier's own; the recorded one is only the run's word.
  // Where they differ, the tolerance keeps honest cross-device work valid,
  // but the number this report vouches for, and the leaderboard shows, is
  // the verifier's: a recorded timing.device buys no accuracy
  // (docs/leaderboard.md#devices-and-the-tolerance).
  if (!same_setting)
    r.facts.push_back("the leaderboard shows the accuracy recomputed here, " + percent(recomputed) +
                      ", not the recorded one (" +
                      (same_device ? "another build of the mixer" : "another device or precision than this verifier's") +
                      ")");
  r.report["test"] = {{"recorded_accuracy", recorded}, {"recomputed_accuracy", recomputed}, {"correct", correct},
                      {"examples", nn}, {"device", device}, {"precision", precision},
                      {"same_device_and_precision", same_device},
                      {"same_build", same_build},
                      {"tolerance", same_setting ? 0.0 : o.tolerance},
                      {"published_accuracy", same_setting ? recorded : recomputed}};

  // 9. The private set.
  if (n_private > 0) {
    const int64_t pn = static_cast<int64_t>(n_private);
    const int64_t pc = count_matches(trained, all, n, all.size(), order);
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
    const int64_t fc = count_matches(fresh, all, 0, all.size(), order);
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

}  // namespace lra::host
