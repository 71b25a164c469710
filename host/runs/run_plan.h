// What a run is, decided before any data or model exists (runs/train_run.h):
// its task and mixer plugins (the mixer in a process of its own with
// --isolate, isolation/isolated_plugin.h), its manifest with --set and
// --reference applied, the mixer's options, the division and the ranks.
#pragma once

#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "distributed/distributed.h"
#include "isolation/isolated_plugin.h"
#include "manifest/manifest.h"
#include "manifest/releases.h"
#include "plugins/loader.h"
#include "plugins/mixer_options.h"
#include "plugins/reference_configuration.h"
#include "rules/rules.h"
#include "runs/official_registry.h"
#include "runs/train_run.h"

namespace lra::host {

// Plugins, manifest and rule tiers, decided before any data or model exists.
struct RunPlan {
  const LoadedPlugin* task = nullptr;
  const LoadedPlugin* mixer = nullptr;       // the host's, or isolated->loaded() (run --isolate)
  std::shared_ptr<IsolatedPlugin> isolated;  // run --isolate: the mixer process; outlives the model
  Manifest manifest;
  std::optional<ReleasedManifest> release;  // the released official manifest this one is, if any
  RunChoices choices;
  RunMixerOptions resolved;
  RunDivision division;
  RankInfo ranks;
  std::optional<ReferenceConfigurationRun> configuration;  // --reference
  nlohmann::json configuration_record;                     // result.json's reference_configuration (null: none)
};

RunPlan plan_run(const RunArgs& a);

}  // namespace lra::host
