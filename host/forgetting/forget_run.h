// forgetting/forget_run.h — `lrahost forget`'s work (docs/forgetting.md):
//   --plugin P      train the manifest's causal LM with P as the mixer, then measure it
//   --torchscript F measure a causal LM exported to TorchScript
//   --compare J...  read curves back (forgetting.json or the reference tool's
//                   result files), memory lengths recomputed, into one plot
// Every check (plugin, manifest, corpus, budget) runs before anything is
// written; forgetting.json and forgetting.svg appear together (atomically)
// when the whole measurement is done. What a person reads on stdout is the
// command's (cli/cmd_forget.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "forgetting/curve.h"
#include "forgetting/measure.h"
#include "forgetting/report_json.h"
#include "lra/options.h"
#include "manifest/manifest.h"
#include "manifest/releases.h"
#include "plugins/loader.h"
#include "rules/rules.h"

namespace lra::host {

struct ForgetArgs {
  std::optional<std::string> plugin, torchscript;  // exactly one of these or compare
  std::vector<std::string> compare;                // forgetting.json files to overlay
  std::string preset = "official";
  std::optional<std::string> manifest, corpus, ids_file, title;
  std::vector<std::string> sets;
  std::optional<int64_t> bos, eos, train_len, max_len, granularity, repeats, seed;
  std::optional<std::string> granularity_type;
  std::string out, device = "auto";
  int threads = 0;
  int64_t batch_tokens = 0;  // 0 = the default token budget per forward pass
  bool log_x = false, fp32 = false;
  std::vector<std::string> command_line;
};

namespace forgetting {

// The measurement settings of a forgetting manifest's [data] (validated here:
// the forgetting task is the host's own, not a task plugin).
struct MeasureSettings {
  std::string corpus = "brown";
  int64_t max_length = 0, granularity = 0, repeats = 0;
  std::string granularity_type;
  uint64_t seed = 0;
  // Optional key (forgetting-v1.1): bos before every training document, as
  // real tokenizers do. Absent = false, what forgetting-v1.0 trained with.
  bool document_bos = false;
};

// --compare: every file read and checked, then compare.svg written into --out.
struct ComparedCurves {
  std::vector<LoadedCurve> loaded;  // in the order of ForgetArgs::compare
  std::filesystem::path svg;        // compare.svg
};
ComparedCurves compare_curves(const ForgetArgs& a);

// A measured curve, its forgetting.json and forgetting.svg written into `out`.
struct ForgetOutcome {
  Curve curve;
  std::filesystem::path out;
  // --plugin: the trained LM's held-out loss (nats/byte) after `steps` steps.
  std::optional<double> held_out_loss;
  int64_t steps = 0;
};

ForgetOutcome forget_torchscript(const ForgetArgs& a, spdlog::logger& log);

// --plugin, in two steps: the plugin, manifest and measurement settings
// checked; then, with the division facts the caller adds (runs/'s
// run_choices, which forgetting/ does not include), the LM trained and
// measured.
struct PluginForget {
  std::chrono::steady_clock::time_point started;  // wall_seconds count from here
  const LoadedPlugin* mixer = nullptr;
  Manifest manifest;
  std::string manifest_label;              // "manifest FILE" or "preset 'NAME'"
  std::vector<std::string> overrides;      // the --set manifest overrides
  lra::Params mixer_options;
  MeasureSettings settings;
  MeasureConfig measure;
  RunChoices choices;                          // set by the caller
  std::optional<ReleasedManifest> release;     // set by the caller: the released manifest this one is
};
PluginForget plan_plugin_forget(const ForgetArgs& a);
ForgetOutcome forget_plugin(const ForgetArgs& a, const PluginForget& plan, spdlog::logger& log);

}  // namespace forgetting
}  // namespace lra::host
