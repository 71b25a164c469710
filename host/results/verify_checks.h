// Internal to lra_host_results: the stages verify_result_json runs, in
// order, over one result file (results/verify.h says what makes a result
// valid and closed). Each stage appends its reasons to the Checker; the order
// of the stages is the order of the reasons a report gives.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "results/field_checker.h"
#include "results/verify.h"

namespace lra::host::verify_internal {

// The fields later stages read, each nullptr when missing or mistyped (the
// field stage has then given the reason).
struct ResultFields {
  const nlohmann::json* division = nullptr;          // "division"
  const nlohmann::json* division_reasons = nullptr;  // "division_reasons"
  const nlohmann::json* valid = nullptr;             // "valid"
  const nlohmann::json* invalid_reasons = nullptr;   // "invalid_reasons"
  const nlohmann::json* params_total = nullptr;      // "plugin.params.total"
  const nlohmann::json* task_name = nullptr;         // "task.name"
  const nlohmann::json* manifest_sha = nullptr;      // "task.manifest_sha256"
  const nlohmann::json* preset = nullptr;            // "task.preset"
  const nlohmann::json* reference_params = nullptr;  // "rules.reference_params"
  const nlohmann::json* budget_ratio = nullptr;      // "rules.param_budget_ratio"
  const nlohmann::json* budget = nullptr;            // "rules.param_budget"
  const nlohmann::json* overrides = nullptr;         // "overrides"
};

// result_fields.cpp — the schema and every field's presence, type and range.
void check_schema(Checker& c);
ResultFields check_result_fields(Checker& c);

// integrity_checks.cpp — the content is what was written, by whom.
void check_digest(Checker& c, const nlohmann::json& result);
// The key id of a signature that verifies, "" when unsigned or it does not
// (then with the reason).
std::string check_result_signature(Checker& c, const nlohmann::json& result);
void check_model_field(Checker& c);
// model.pt beside `result_file` must have the recorded model.sha256 (absent:
// the result travels alone, nothing to check).
void check_model_file(const nlohmann::json& result, const std::filesystem::path& result_file, VerifyReport& report);
// A Python mixer's source files must have the SHA-256s plugin.source.files
// records: the run's own copy beside `result_file` when it kept one (a
// changed working file is then a note), else where plugin.file says they are
// (the class's file absent: the result travels alone, nothing to check).
void check_python_source_files(const nlohmann::json& result, const std::filesystem::path& result_file,
                               VerifyReport& report);

// budget_check.cpp — rules.param_budget and plugin.params.total agree with the rules.
void check_param_budget(Checker& c, const ResultFields& f);

// optimizer_check.cpp — optimizer.groups (when recorded) only lower weight
// decay and learning rates, and cover every parameter once.
void check_optimizer_groups(Checker& c, const nlohmann::json& result, const ResultFields& f);

// configuration_check.cpp — a reference_configuration record (run
// --reference) is the compiled-in table's entry for the result's plugin and
// task, `changed` is recomputed from config and plugin.options, and the
// result is open. Returns the configuration in words ("" when the result has
// none or the record fails).
std::string check_reference_configuration(Checker& c, const nlohmann::json& result);
// A built-in mixer's plugin.reference_settings names the table (and its bytes)
// that config.rules.reference_settings names, when the config names one.
void check_reference_settings_table(Checker& c, const nlohmann::json& result);

// pretraining_check.cpp — a self-pretrained result's chain: the phase the
// configuration asks for, on the training split, with its weights. Returns
// the protocol in words: "self-pretrained" or "from scratch".
std::string check_pretraining(Checker& c, const nlohmann::json& result);
// pretraining/encoder.pt beside `result_file` (pretraining.weights_file) must
// have the recorded pretraining.weights_sha256 (absent: nothing to check).
void check_pretrained_weights_file(const nlohmann::json& result, const std::filesystem::path& result_file,
                                   VerifyReport& report);

// division_check.cpp — the division recomputed: true only when a "closed"
// claim holds; then `release` is the official release it names by hash,
// otherwise it is reset.
bool check_division(Checker& c, const nlohmann::json& result, const ResultFields& f,
                    const OfficialLookup& official, std::optional<OfficialManifest>& release);

}  // namespace lra::host::verify_internal
