// A Python mixer's re-evaluation, as the sandboxed `evaluate-run
// --python-report FILE` (cli/cmd_evaluate_run.cpp) describes it:
//   {"environment": {"python", "torch"} | {"error"},   the sandbox's interpreter
//    "identity": {"name", "sha256", "source"},          the class as it opened
//    "error": "..."}                                    why it did not open / was refused
// read back untrusted (bounded, symlink-free) and compared with what the
// result records, for reevaluation.json's "python" section and its reasons.
// Only the init pass writes it: that pass sees no test inputs, so nothing of
// the private set can reach the published report through it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lra::host {

inline constexpr uint64_t kMaxPythonReportBytes = 1 << 20;
inline constexpr const char* kPythonReportName = "python-report.json";

struct PythonRunCheck {
  nlohmann::json report;           // reevaluation.json's "python"
  std::vector<std::string> facts;  // lines for the verifier's output
  // Why the class did not open or is not the recorded one (the plugin's
  // error text, bounded and shown as text; the differing files); "" if it did.
  std::string problem;
  // "" or which torch the run used (plugin.source.torch) and which the sandbox's Python has.
  std::string torch_note;
};

// `file`: the report in the init pass's scratch folder (may be absent when
// the pass died first); `result`: the run's result.json; `renames`: paths of
// the sandbox area and what the report calls them instead (the staged folder
// by its name in the bundle), so the error text says what a reader can find.
PythonRunCheck check_python_report(const std::filesystem::path& file, const nlohmann::json& result,
                                   const std::vector<std::pair<std::string, std::string>>& renames = {});

}  // namespace lra::host
