#include "runs/run_model.h"

#include "common/text.h"
#include "device/device.h"
#include "lra/status.h"
#include "model/summary_probe.h"
#include "plugins/conformance.h"
#include "plugins/decode_check.h"
#include "plugins/mixer_factory.h"
#include "plugins/reference_configuration.h"
#include "runs/sequence_model.h"

namespace lra::host {

BuiltModel build_model(const RunPlan& p, const lra::Dataset& data, const std::string& device, spdlog::logger& log) {
  const auto& m = p.manifest;
  const std::string& name = p.mixer->descriptor.name;
  const BackboneSpec spec = backbone_spec(m.model, data, static_cast<uint64_t>(m.train.seed));
  check_sequence_model(m, data, p.mixer->descriptor, p.task->descriptor.name);
  torch::manual_seed(m.train.seed);
  const int64_t reference_params = count_parameters(*Classifier(spec, make_reference_attention));
  BuiltModel b;
  b.budget = compute_param_budget(reference_params, m.rules.param_budget_ratio);
  const MixerMaker make_mixer = plugin_mixer_factory(*p.mixer, p.resolved.options);
  if (m.model.positions == "rotary" && !(p.mixer->descriptor.capabilities & LRA_CAP_ROTARY))
    throw Error(ErrorKind::rules, "model.positions = \"rotary\" gives positions only through the mixers, and " + name +
                                      " does not declare LRA_CAP_ROTARY (it would see no positions); use sinusoidal "
                                      "or learned positions with it");
  torch::manual_seed(m.train.seed);
  std::vector<lra::MixerSpec> mixer_specs;  // each block's, for the conformance checks
  b.model = Classifier(spec, recording_specs(make_mixer, &mixer_specs));
  b.total_params = count_parameters(*b.model);
  log.info("model: {} parameters ({} in the mixers); reference Transformer {}; budget {}", with_commas(b.total_params),
           with_commas(b.model->mixer_parameters()), with_commas(reference_params), with_commas(b.budget.budget));
  enforce_param_budget(b.budget, b.total_params, name);
  if (spec.from_last_state())
    log.info("readout: every position decoded from each example's last state (task '{}', SequenceReadout::"
             "from_last_state: MAD's AutoEncoder decoder; the encoder's mixers are checked as any sequence task's)",
             p.task->descriptor.name);
  b.groups_of = [abi_minor = p.mixer->descriptor.abi_minor, name, train = m.train](const Classifier& model) {
    return optimizer_groups(*model, model->mixers(), abi_minor, name, train);
  };
  b.groups = b.groups_of(b.model);
  log_hinted_groups(b.groups, log);
  // The plugin keeps the promises its descriptor makes, at this task's shape (plugins/conformance.h).
  uint32_t capabilities = p.mixer->descriptor.capabilities;
  if (p.configuration)  // checks its settings are known to fail (LRA's unmasked keys): not run, and said so
    for (const auto& check : p.configuration->entry.conformance_not_checked) {
      capabilities &= ~capability_checked_by(check);
      log.info("conformance check {} not run: {} reproduces behaviour that fails it", check,
               p.configuration->table->label());
    }
  log.info("{}", enforce_conformance(name, check_conformance(capabilities, make_mixer, mixer_specs,
                                                              {2, static_cast<uint64_t>(m.train.seed),
                                                               /*causal_model=*/spec.per_position, 10000.0,
                                                               pick_device(device).str()})));
  // A sequence task's result records the decoding state the host measures
  // (runs/sequence_model.h): steps that drop the context are refused before
  // any training, as bench --decode refuses them (plugins/decode_check.h).
  if (spec.per_position && p.mixer->descriptor.abi_minor >= 3 && !mixer_specs.empty()) {
    const auto decode = enforce_decode_parity(name, make_mixer, mixer_specs.front(), pick_device(device),
                                              static_cast<uint64_t>(m.train.seed), 2,
                                              /*has_prefill=*/p.mixer->descriptor.abi_minor >= 6);
    log.info("decode check {}{}", decode.status, decode.status == "skipped" ? ": " + decode.detail : "");
  }
  // Where the head reads: probed once the mixer has passed its checks, so a
  // faulty mixer is reported by them (rules/summary_position.h).
  b.summary = choose_summary_position(make_mixer, spec);
  b.model->set_summary(b.summary);
  b.rebuild = [spec, make_mixer, seed = m.train.seed, summary = b.summary] {
    torch::manual_seed(seed);
    Classifier c(spec, make_mixer);
    c->set_summary(summary);
    return c;
  };
  if (b.summary == SummaryPosition::after_last)
    log.info("summary: after each example's last real token ({} does not read ahead: its output at position 0 "
             "ignores later positions; docs/rules.md#causal-mixers-and-the-summary-token)", name);
  return b;
}

}  // namespace lra::host
