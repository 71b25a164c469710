#include "reevaluation/pretraining_evidence.h"

#include <filesystem>
#include <string>

#include "common/json_input.h"
#include "pretrain/pretraining_phase.h"
#include "reevaluation/verifier_setting.h"
#include "rules/fine_tuning_replay.h"
#include "train/batches.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

std::optional<FineTuningReplayInput> check_pretraining_evidence(const json& phase, const json& result,
                                                                const Manifest& config, const lra::Dataset& data,
                                                                const ReevaluateOptions& o, RunReevaluation& r) {
  auto fail = [&](std::string why) { r.reasons.push_back(std::move(why)); };
  struct Split {
    const char* field;  // under pretraining.data
    std::string recorded, here;
  };
  const Split splits[] = {
      {"inputs_fingerprint", json_text_at(phase, {"data", "inputs_fingerprint"}), split_inputs_fingerprint(data.train)},
      {"held_out_inputs.val", json_text_at(phase, {"data", "held_out_inputs", "val"}),
       split_inputs_fingerprint(data.val)},
      {"held_out_inputs.test", json_text_at(phase, {"data", "held_out_inputs", "test"}),
       split_inputs_fingerprint(data.test)}};
  for (const auto& sp : splits)
    if (sp.recorded != sp.here)
      fail("pretraining.data." + std::string(sp.field) + " is " + (sp.recorded.empty() ? "missing" : sp.recorded) +
           ", these data's inputs hash to " + sp.here + ": the pretraining did not read this task's training split "
           "alone as recorded");
  r.facts.push_back("self-pretrained: its pretraining read this task's training inputs (" +
                    split_inputs_fingerprint(data.train) + "), none of the held-out ones");

  // The two weights files, under the names the bundle gives them.
  const fs::path dir = r.result_file.parent_path() / kPretrainingDir;
  const std::string encoder = std::string(kPretrainingDir) + "/" + kPretrainedWeights;
  const std::string start_file = std::string(kPretrainingDir) + "/" + kFineTuningStartWeights;
  std::error_code ec;
  if (json_text_at(phase, {"weights_file"}) != encoder || !fs::is_regular_file(dir / kPretrainedWeights, ec)) {
    fail("the bundle does not carry the pretraining's weights as " + encoder + " (pretraining.weights_file " +
         json(json_text_at(phase, {"weights_file"})).dump() + "): the fine-tuning's start cannot be tied to the record");
    return std::nullopt;
  }
  const json* start = json_at(phase, {"fine_tuning_start"});
  if (!start) {
    fail("pretraining.fine_tuning_start is missing: the result does not keep the fine-tuning's weights after its "
         "first updates (results written before lrahost kept them), so its start from the pretrained weights cannot "
         "be replayed; run the fine-tuning again with this lrahost");
    return std::nullopt;
  }
  if (json_text_at(*start, {"weights_file"}) != start_file || !fs::is_regular_file(dir / kFineTuningStartWeights, ec)) {
    fail("the bundle does not carry the fine-tuning's weights after its first updates as " + start_file +
         " (pretraining.fine_tuning_start.weights_file " + json(json_text_at(*start, {"weights_file"})).dump() +
         "): its start from the pretrained weights cannot be replayed");
    return std::nullopt;
  }
  const json* micro = json_at(result, {"timing", "micro_batch"});
  const VerifierSetting setting = verifier_setting(o, result);
  return FineTuningReplayInput{dir / kPretrainedWeights, dir / kFineTuningStartWeights,
                               replayed_updates(config.train.steps),
                               micro && micro->is_number_integer() ? micro->get<int64_t>() : 0,
                               setting.precision == "bfloat16 autocast", setting.same_as_run};
}

}  // namespace lra::host
