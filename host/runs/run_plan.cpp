#include "runs/run_plan.h"

#include <algorithm>

#include "common/text.h"
#include "device/device.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

// A task is named, never a path: an unknown name is a usage error (exit 2).
const LoadedPlugin& open_task(const std::string& name) {
  auto names = available_plugin_names(LRA_KIND_TASK);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    const std::string list = text::join(names);
    throw Error(ErrorKind::usage, "unknown task '" + name + "' (available: " + (list.empty() ? "none" : list) +
                                      "; LRA's tasks are listops, text, retrieval, image, pathfinder, pathx)");
  }
  return open_plugin(name, LRA_KIND_TASK);
}

}  // namespace


RunPlan plan_run(const RunArgs& a) {
  RunPlan p;
  // Plugins first: a rejected plugin must stop the run before anything else.
  p.task = &open_task(a.task);
  if (a.isolate) {
    // Data parallel ranks would each start a process of their own: one rank only.
    if (rank_info_from_environment().world_size > 1)
      throw Error(ErrorKind::usage, "--isolate trains in one process: it cannot be combined with data-parallel ranks");
    IsolationOptions io;
    io.device = pick_device(a.device).is_cuda() ? "cuda" : "cpu";
    io.threads = effective_threads(a.threads);
    p.isolated = std::make_shared<IsolatedPlugin>(a.plugin, io);
    p.mixer = &p.isolated->loaded();
  } else {
    p.mixer = &open_plugin(a.plugin, LRA_KIND_MIXER);
  }
  // Manifest, then the rule tiers: fixed keys (open if changed), mixer options (bounded).
  p.manifest = a.manifest ? load_manifest_file(*a.manifest) : load_preset(a.task, a.preset, a.protocol);
  if (p.manifest.task != a.task)
    throw Error(ErrorKind::rules,
                p.manifest.source + ": manifest is for task '" + p.manifest.task + "', not '" + a.task + "'");
  // The protocol is the manifest's: a [pretrain] section is self-pretraining.
  check_protocol(a.protocol);
  if (p.manifest.pretrain.present != (a.protocol == "spt"))
    throw Error(ErrorKind::usage,
                p.manifest.source + (p.manifest.pretrain.present
                                         ? " has a [pretrain] section (self-pretraining): pass --protocol spt"
                                         : " has no [pretrain] section (it trains from scratch): --protocol spt "
                                           "needs a self-pretraining manifest (the spt presets, or one with [pretrain])"));
  p.choices = run_choices(a.task,
                          a.manifest ? "manifest " + p.manifest.source
                                     : "preset '" + a.preset + "'" + (a.protocol == "spt" ? " (protocol spt)" : ""),
                          p.manifest.text, &p.release, release_protocol(a.protocol, a.task));
  // --reference: the entry's manifest settings first, as overrides; the user's --set after them wins.
  if (a.reference) {
    p.configuration = apply_reference_configuration(*a.reference, *p.mixer, a.task, p.manifest, &p.choices.overrides);
    p.choices.configured = p.choices.overrides.size();
    p.choices.configured_by = "--reference " + *a.reference;
  }
  auto mixer_sets = apply_sets(a.sets, p.manifest, &p.choices.overrides);
  if (p.configuration) mixer_sets = with_configuration_options(*p.configuration, mixer_sets);
  if (a.seed) p.manifest.train.seed = *a.seed;  // a trial index: recorded, stays closed
  // Data parallel when launched as several ranks; the manifest's global batch is kept.
  p.ranks = rank_info_from_environment();
  if (p.manifest.train.batch_size % p.ranks.world_size != 0)
    throw Error(ErrorKind::usage, "world size " + std::to_string(p.ranks.world_size) + " does not divide the manifest's "
                                      "global batch train.batch_size = " + std::to_string(p.manifest.train.batch_size) +
                                      " (each rank trains on batch / world size examples)");
  // Built-in mixers start from the task's LRA reference settings (the table the
  // manifest names, manifests/reference-mixers/), then --set.
  p.resolved = resolve_run_mixer_options(*p.mixer, mixer_sets, p.manifest);
  p.division = classify_run(p.choices);
  if (p.configuration) {
    // Open whatever it changes (the transformer's entry changes nothing): the
    // closed division keeps one backbone for every mixer.
    p.configuration_record =
        reference_configuration_record(*p.configuration, to_json(p.manifest), params_json(p.resolved.options));
    p.division.open_because(describe_reference_configuration(p.configuration_record) +
                            ": a paper's per-model settings, not the closed division's one backbone for all");
    std::rotate(p.division.reasons.begin(), p.division.reasons.end() - 1, p.division.reasons.end());
  }
  return p;
}


}  // namespace lra::host
