#include "reevaluation/isolated_evaluation.h"

#include <chrono>
#include <map>

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "common/json_input.h"
#include "common/text.h"
#include "device/device.h"
#include "lra/status.h"
#include "manifest/manifest_text.h"
#include "model/summary_probe.h"
#include "plugins/state_size.h"
#include "isolation/cpu_turns.h"
#include "isolation/remote_mixer.h"
#include "reevaluation/model_parameters.h"
#include "rules/summary_position.h"
#include "train/module_io.h"
#include "train/optimizer_groups.h"
#include "train/trainer.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void restore(torch::nn::Module& m, const NamedTensors& from) {
  std::map<std::string, const at::Tensor*> by_name;
  for (const auto& [name, t] : from) by_name[name] = &t;
  torch::NoGradGuard no_grad;
  for (const auto& nt : wire::module_tensors(m)) nt.tensor.copy_(*by_name.at(nt.name));
}

// A sequence task's state size, measured here through the mixer process (the
// state crosses with every step: what is counted is all the steps are given),
// at the lengths the result records, else at the test inputs' own. A recorded
// measurement must be this one, byte for byte; a result that recorded none (an
// isolated run of an earlier host) is told what the verifier measured.
json judge_state_size(Classifier& model, const RunRecord& run, MixerProcess& process, const lra::Split& inputs,
                      const torch::Device& device, RunReevaluation& r) {
  const json* recorded = json_at(run.result, {"state_size"});
  const bool claimed = recorded && recorded->is_object() && recorded->value("measured", false);
  std::vector<int64_t> lengths;
  if (claimed)
    for (const auto& p : (*recorded)["per_length"]) lengths.push_back(p.at("length").get<int64_t>());
  else
    lengths = state_lengths(inputs, run.model.max_len);
  const json own = model_state_size(model, run.model, run.plugin_name, process.abi_minor(), lengths, device,
                                    static_cast<uint64_t>(run.seed));
  const bool measured = own.value("measured", false);
  auto text = [](const json& s) {
    std::string t;
    for (const auto& p : s["per_length"])
      t += (t.empty() ? "" : ", ") + text::bytes_text(p["bytes"].get<int64_t>()) + " at " +
           std::to_string(p["length"].get<int64_t>());
    return t;
  };
  if (claimed && !measured)
    r.reasons.push_back("state_size records a measured state, but the plugin's state cannot be measured here: " +
                        own.value("why", std::string()));
  else if (claimed && (*recorded)["per_length"] != own["per_length"])
    r.reasons.push_back("state_size records " + text(*recorded) + " tokens; measured through the mixer process: " +
                        text(own) + " (docs/suites.md#state-size-measured-never-declared)");
  else if (claimed)
    r.facts.push_back("state size measured through the mixer process: " + text(own) + " tokens, as recorded");
  else if (measured)
    r.facts.push_back("state size measured through the mixer process: " + text(own) + " tokens (the result recorded "
                      "none)");
  else
    r.facts.push_back("state size not measured, as recorded: " + own.value("why", std::string()));
  return own;
}

}  // namespace

IsolatedEvaluation evaluate_isolated(const IsolatedEvaluationInput& in, MixerProcess& process, const ReevaluateOptions& o,
                                     RunReevaluation& r) {
  auto fail = [&](std::string why) { r.reasons.push_back(std::move(why)); };
  IsolatedEvaluation out;
  const RunRecord& run = in.run;
  const auto started = std::chrono::steady_clock::now();
  const std::string kept = "; its output is kept, unpublished, in logs/" + r.run + "-mixer.log of --out";
  const CpuTurns turns(o.threads);  // the verifier's BLAS leaves the cores to the mixer process in its turn
  try {
    process.open();
    if (process.plugin_name() != run.plugin_name)
      throw Error(ErrorKind::plugin, "the submitted plugin opened in the mixer process is not the plugin the run names");
    const MixerFactory factory = remote_mixer_factory(process, recorded_option_texts(run));

    // A sequence task's model: the per-position backbone its data call for.
    const bool sequence = in.targets != nullptr;
    const auto spec = [&](SummaryPosition summary) {
      if (sequence) return backbone_spec(run.model, *in.data, run.seed);
      return BackboneSpec{run.model, in.info.vocab_size, in.info.num_classes, run.seed, in.info.paired, summary};
    };

    // Where the head reads: the host's probe, through the confined mixer (a
    // sequence task's head reads every position: nothing to probe).
    if (run.summary_recorded && !sequence) {
      const SummaryPosition probed = choose_summary_position(
          factory, BackboneSpec{run.model, in.info.vocab_size, in.info.num_classes, run.seed, in.info.paired});
      const std::string name = summary_position_name(probed);
      if (probed != run.summary)
        fail("model.summary is \"" + summary_position_name(run.summary) + "\", but the host's probe of the plugin, "
             "built as the run built it, gives \"" + name + "\" (docs/rules.md#causal-mixers-and-the-summary-token)");
      else
        r.facts.push_back("summary position probed through the mixer process: " + name + ", as recorded");
    }

    // The model as the run built it before training.
    torch::manual_seed(run.seed);
    Classifier model(spec(run.summary), factory);
    model->eval();
    const NamedTensors fresh = snapshot_tensors(*model);

    // The optimizer groups: the plugin's hints, grouped by the host.
    if (const json* recorded = json_at(run.result, {"optimizer"}); recorded && !recorded->is_null()) {
      const auto mixers = model->mixers();
      const json computed =
          optimizer_record(optimizer_groups(*model, mixers, static_cast<int>(process.abi_minor()), run.plugin_name,
                                            in.config.train),
                           in.config.train.weight_decay);
      if (computed != *recorded)
        fail("optimizer in result.json is not what the plugin's optimizer hints give for this model: recorded " +
             recorded->dump() + ", the plugin gives " + computed.dump());
      else
        r.facts.push_back("optimizer groups recomputed from the plugin's hints: " +
                          std::to_string(computed.value("groups", json::array()).size()) + ", as recorded");
    }

    // The budget, counted from model.pt against the fresh model made here.
    const ModelFileCount count = count_trained_values(read_model_file(run.model_file), fresh, in.host_buffers);
    if (count.counted > in.budget.budget)
      fail("model.pt holds " + std::to_string(count.counted) + " trained values (parameters and mixer buffers that "
           "differ from their initial values), over the parameter budget " + std::to_string(in.budget.budget) + " (" +
           manifest_detail::fmt_double(in.config.rules.param_budget_ratio) + " x the reference Transformer's " +
           std::to_string(in.budget.reference) + ")");
    r.facts.push_back("parameters counted from model.pt: " + std::to_string(count.counted) + " trained values (budget " +
                      std::to_string(in.budget.budget) + "; " + std::to_string(count.unchanged) +
                      " fixed values as initialised, " + std::to_string(count.host_buffers) +
                      " in the backbone's position table)");
    out.parameters = {{"counted", count.counted}, {"unchanged", count.unchanged}, {"host_buffers", count.host_buffers},
                      {"budget", in.budget.budget}, {"reference", in.budget.reference}};

    // The two passes, in the secret order; the mixer process gets its tensors before each.
    const torch::Device device = pick_device(o.device);
    model->to(device);
    const int64_t batch = recorded_evaluation_pass(run.result);
    const bool bf16 = device.is_cuda() && recorded_bf16(run.result);
    auto load_weights = [&](bool trained) {
      if (trained) {
        try {
          load_module(*model, run.model_file, device);
        } catch (const c10::Error& e) {
          throw Error(ErrorKind::data, "model.pt does not fit the model result.json describes (" + text::first_line(e.what_without_backtrace()) + ")");
        }
      } else {
        restore(*model, fresh);
      }
    };
    for (bool trained : {in.trained_first, !in.trained_first}) {
      load_weights(trained);
      if (sequence)
        (trained ? out.trained_positions : out.fresh_positions) =
            count_right_positions(model, in.inputs, *in.targets, run.model.max_len, batch, device, bf16);
      else
        (trained ? out.trained : out.fresh) = predict(model, in.inputs, run.model.max_len, batch, device, bf16);
    }
    if (sequence) out.state_size = judge_state_size(model, run, process, in.inputs, device, r);
    if (in.replay && in.data)
      out.fine_tuning_start = replay_fine_tuning_start(*in.replay, run, in.config, *in.data, factory,
                                                       static_cast<int>(process.abi_minor()), device, r);
    const auto& s = process.stats();
    const SandboxOutcome ended = process.stop();
    out.isolation = {{"calls", s.calls}, {"bytes", s.bytes}, {"seconds_in_calls", s.seconds},
                     {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()},
                     {"process_end", ended.describe()}};
    r.facts.push_back("mixer process: " + std::to_string(s.calls) + " calls, " + std::to_string(s.bytes >> 20) +
                      " MiB across the boundary");
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::storage || e.kind() == ErrorKind::memory) throw;
    out.trained.reset();
    out.fresh.reset();
    out.trained_positions.reset();
    out.fresh_positions.reset();
    fail(std::string(e.what()) + kept);
  } catch (const c10::Error& e) {
    out.trained.reset();
    out.fresh.reset();
    out.trained_positions.reset();
    out.fresh_positions.reset();
    fail("the model could not be evaluated (" + text::first_line(e.what_without_backtrace()) + ")" + kept);
  }
  return out;
}

}  // namespace lra::host
