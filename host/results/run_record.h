// A finished run's record, read back from its result.json: what the run
// built (plugin, options, model configuration, seed, summary position) and
// which data it used. Shared by everything that rebuilds a trained run:
// `lrahost span` (runs/trained_run.h) and the verifier (reevaluation/).
// Every failure names the file and field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "lra/options.h"
#include "manifest/manifest.h"
#include "rules/summary_position.h"

namespace lra::host {

struct RunRecord {
  std::filesystem::path dir, result_file, model_file;
  nlohmann::json result;                 // result.json as read
  std::string plugin_name, plugin_file, plugin_sha256;
  nlohmann::json plugin_options;         // the resolved options the run used
  std::string task;
  ModelConfig model;                     // config.model
  lra::Params data_params;               // task.data_params
  std::string data_fingerprint;
  uint64_t seed = 0;
  SummaryPosition summary = SummaryPosition::first;  // model.summary (absent: what older hosts did)
  bool summary_recorded = false;
};

// Reads DIR/result.json and checks that DIR/model.pt exists. A missing
// directory or file, or a field that is missing or of the wrong type, is
// lra::Error(data) naming what is expected; a forgetting-curve run
// (`lrahost forget`) is Error(usage).
RunRecord read_run_record(const std::filesystem::path& dir);

// Mixer options (a JSON object, as result.json's plugin.options) as the
// text `--set mixer.KEY=VALUE` would give, for the plugin's declaration to
// type again (plugins/mixer_options.h).
std::map<std::string, std::string> option_texts(const nlohmann::json& options);
// The run's recorded options so.
std::map<std::string, std::string> recorded_option_texts(const RunRecord& run);

}  // namespace lra::host
