// Before a verifier generates or loads data for a result it did not make
// (`verify --reevaluate`), the result's task.data_params must be data the
// verifier is willing to make: a generated task's data are regenerated from
// them, so `images = 2000000000` would otherwise fill the verifier's disk
// before anything else is checked.
//
// The rule (docs/rules.md "Data parameters a verifier accepts"):
//   - a result that claims closed, or names a released official manifest of
//     its task (task.manifest_sha256) without a `data.*` override, must carry
//     exactly that manifest's [data], key for key and value for value;
//   - any other (open) result: every key must be one that some manifest of
//     the task sets (a released official or the smoke manifest), every value
//     a scalar, and every number other than a `seed` no larger than the
//     largest value that key has in those manifests.
// The caps are derived from the embedded manifests, never a table of their own.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lra::host {

// Why `result`'s task.data_params must not be used to make data, naming the
// key, the value and the cap or official value; std::nullopt when they may.
// Reads task.name, task.manifest_sha256, division and overrides; a task with
// no embedded manifest at all (a third-party task) is refused too.
std::optional<std::string> check_result_data_params(const nlohmann::json& result);

// The same, thrown as lra::Error(data) prefixed with `where` (e.g. the file).
void require_result_data_params(const nlohmann::json& result, const std::string& where);

}  // namespace lra::host
