// check_pretraining: a self-pretrained result's chain (docs/rules.md
// "Self-pretraining"), as far as the file and the weights beside it can
// prove it. The pretraining record must be the phase the configuration's
// [pretrain] section asks for (present exactly when it is; the objective the
// mixer's probed summary position decides; the steps and masking ratio of
// the section, which a closed claim checks against the released manifest);
// its data must be the task's training split (its example count, and an
// inputs fingerprint that is neither held-out split's); and its weights file
// must be the pretraining's, as must the fine-tuning's weights after its
// first updates. verify --reevaluate recomputes every fingerprint from the
// data and trains those first updates again from encoder.pt.
#include <filesystem>

#include "common/json_input.h"
#include "common/sha256.h"
#include "rules/fine_tuning_replay.h"
#include "results/verify_checks.h"
#include "rules/pretraining_objective.h"

namespace lra::host::verify_internal {

using nlohmann::json;

std::string check_pretraining(Checker& c, const json& result) {
  const json* config_pretrain = json_at(result, {"config", "pretrain"});
  const bool asked = config_pretrain && config_pretrain->is_object();
  const bool recorded = result.contains("pretraining");
  if (!asked && !recorded) return "from scratch";
  if (!asked) {
    c.fail("pretraining is recorded but config has no pretrain section: the configuration the run records trains "
           "from scratch");
    return "self-pretrained";
  }
  if (!recorded) {
    c.fail("config.pretrain asks for a self-pretraining phase but the result records none (pretraining is missing)");
    return "self-pretrained";
  }
  const json* objective = c.require("pretraining.objective", kString);
  const json* steps = c.require("pretraining.steps", kInteger);
  const json* split = c.require("pretraining.data.split", kString);
  const json* examples = c.require("pretraining.data.examples", kInteger);
  const json* inputs = c.require("pretraining.data.inputs_fingerprint", kString);
  const json* val = c.require("pretraining.data.held_out_inputs.val", kString);
  const json* test = c.require("pretraining.data.held_out_inputs.test", kString);
  const json* weights = c.require("pretraining.weights_sha256", kString);
  c.array_of("pretraining.history", kObject, true);
  check_sha256_field(c, "pretraining.weights_sha256", weights);

  const json* summary = json_at(result, {"model", "summary"});
  if (objective && summary && summary->is_string()) {
    const std::string want = objective_name_for_summary(summary->get<std::string>());
    if (objective->get<std::string>() != want)
      c.fail("pretraining.objective is " + quoted(objective->get<std::string>()) + ", but a mixer whose summary is " +
             quoted(summary->get<std::string>()) + " pretrains with " + quoted(want) +
             " (docs/rules.md#self-pretraining)");
  }
  const json* want_steps = json_at(*config_pretrain, {"steps"});
  if (steps && want_steps && want_steps->is_number_integer() && *steps != *want_steps)
    c.fail("pretraining.steps is " + show(*steps) + ", config.pretrain.steps is " + show(*want_steps) +
           ": the phase did not run the configured updates");
  const json* ratio = json_at(result, {"pretraining", "mask_ratio"});
  const json* want_ratio = json_at(*config_pretrain, {"mask_ratio"});
  if (objective && objective->get<std::string>() == "masked_tokens" &&
      !(ratio && ratio->is_number() && want_ratio && want_ratio->is_number() &&
        ratio->get<double>() == want_ratio->get<double>()))
    c.fail("pretraining.mask_ratio is " + (ratio ? show(*ratio) : std::string("missing")) +
           ", config.pretrain.mask_ratio is " + (want_ratio ? show(*want_ratio) : std::string("missing")));
  if (split && split->get<std::string>() != "train")
    c.fail("pretraining.data.split is " + quoted(split->get<std::string>()) +
           ": a self-pretraining phase reads the task's training split, never its validation or test inputs");
  const json* train_examples = json_at(result, {"task", "examples", "train"});
  if (examples && train_examples && train_examples->is_number_integer() && *examples != *train_examples)
    c.fail("pretraining.data.examples is " + show(*examples) + ", the task's training split has " +
           show(*train_examples) + ": the phase read other data");
  // The fine-tuning's weights after its first updates, which --reevaluate
  // trains again from encoder.pt (results before they were kept lack it;
  // verify --reevaluate requires it).
  if (json_at(result, {"pretraining", "fine_tuning_start"})) {
    const json* updates = c.require("pretraining.fine_tuning_start.updates", kInteger);
    c.require("pretraining.fine_tuning_start.weights_file", kString);
    check_sha256_field(c, "pretraining.fine_tuning_start.weights_sha256",
                       c.require("pretraining.fine_tuning_start.weights_sha256", kString));
    const json* train_steps = json_at(result, {"config", "train", "steps"});
    if (updates && train_steps && train_steps->is_number_integer() &&
        *updates != replayed_updates(train_steps->get<int64_t>()))
      c.fail("pretraining.fine_tuning_start.updates is " + show(*updates) + ", a fine-tuning of " +
             show(*train_steps) + " updates keeps its weights after " +
             std::to_string(replayed_updates(train_steps->get<int64_t>())));
  }
  if (inputs && val && test) {
    for (const auto& [name, held] : {std::pair<const char*, const json*>{"validation", val}, {"test", test}})
      if (*inputs == *held)
        c.fail("pretraining.data.inputs_fingerprint is the " + std::string(name) +
               " split's: the phase pretrained on held-out inputs");
  }
  return "self-pretrained";
}

namespace {

// A weights file the pretraining record names beside the result: inside the
// run directory, and with the recorded hash when it is there.
void check_recorded_weights(const json* recorded, const json* file, const std::string& record, const std::string& what,
                            const std::filesystem::path& result_file, VerifyReport& report) {
  if (!recorded || !recorded->is_string() || !file || !file->is_string()) return;
  const std::filesystem::path relative(file->get<std::string>());
  if (relative.is_absolute() || relative.lexically_normal().string().rfind("..", 0) == 0) {
    report.reasons.push_back(record + ".weights_file " + quoted(file->get<std::string>()) +
                             " is not a path inside the run directory");
    report.valid = false;
    return;
  }
  std::error_code ec;
  const std::filesystem::path weights = result_file.parent_path() / relative;
  if (!std::filesystem::is_regular_file(weights, ec)) return;  // the result travels alone
  const std::string have = sha256_file(weights);
  if (normalise_sha256(recorded->get<std::string>()) != have) {
    report.reasons.push_back(weights.string() + " is not " + what + " (sha256 " + have + " != recorded " + record +
                             ".weights_sha256 " + recorded->get<std::string>() + ")");
    report.valid = false;
  }
}

}  // namespace

void check_pretrained_weights_file(const json& result, const std::filesystem::path& result_file, VerifyReport& report) {
  check_recorded_weights(json_at(result, {"pretraining", "weights_sha256"}),
                         json_at(result, {"pretraining", "weights_file"}), "pretraining", "the pretraining's weights",
                         result_file, report);
  check_recorded_weights(json_at(result, {"pretraining", "fine_tuning_start", "weights_sha256"}),
                         json_at(result, {"pretraining", "fine_tuning_start", "weights_file"}),
                         "pretraining.fine_tuning_start", "the fine-tuning's weights after its first updates",
                         result_file, report);
}

}  // namespace lra::host::verify_internal
