// verify's integrity stages: the digest matches the content, a signature
// verifies over it, and the weights are the ones the result records.
#include "results/verify_checks.h"

#include "common/json_input.h"
#include "common/python_source_files.h"
#include "common/sha256.h"
#include "results/result.h"
#include "results/signature.h"
#include "rules/summary_position.h"

namespace lra::host::verify_internal {

using nlohmann::json;

void check_digest(Checker& c, const json& result) {
  if (const json* digest = c.require("digest", kString)) {
    const std::string recomputed = compute_digest(result);
    if (digest->get<std::string>() != recomputed) {
      c.fail("content was edited after the run (digest " + digest->get<std::string>() +
             " != recomputed " + recomputed + ")");
    }
  }
}

std::string check_result_signature(Checker& c, const json& result) {
  if (const SignatureCheck sig = check_signature(result); sig.present) {
    if (sig.valid) return sig.key_id;
    c.fail(sig.problem);
  }
  return "";
}

void check_model_field(Checker& c) {
  c.optional("model", kObject);
  check_sha256_field(c, "model.sha256", c.optional("model.sha256", kString));
  // Where the head reads (docs/rules.md#causal-mixers-and-the-summary-token):
  // a known position, and one the pooling can have. Whether the mixer earns
  // "after_last" is the probe's to say; --reevaluate runs it again.
  const json* summary = c.optional("model.summary", kString);
  if (!summary) return;
  const auto position = summary_position_from_name(summary->get<std::string>());
  if (!position) {
    c.fail("model.summary must be \"first\", \"after_last\" or \"mean\", found " + show(*summary));
    return;
  }
  const json* pooling = json_at(c.root(), {"config", "model", "pooling"});
  if (pooling && pooling->is_string() && !summary_fits_pooling(*position, pooling->get<std::string>()))
    c.fail("model.summary " + show(*summary) + " does not fit config.model.pooling " + show(*pooling) +
           " (mean pooling reads every position: \"mean\"; cls and first read one: \"first\" or \"after_last\")");
}

void check_model_file(const json& result, const std::filesystem::path& result_file, VerifyReport& report) {
  std::error_code ec;
  const std::filesystem::path model = result_file.parent_path() / "model.pt";
  const json* recorded = json_at(result, {"model", "sha256"});
  if (recorded && recorded->is_string() && std::filesystem::is_regular_file(model, ec)) {
    const std::string have = sha256_file(model);
    if (normalise_sha256(recorded->get<std::string>()) != have) {
      report.reasons.push_back("model.pt was changed after the run (sha256 " + have + " != recorded model.sha256 " +
                               recorded->get<std::string>() + ")");
      report.valid = false;
    }
  }
}

void check_python_source_files(const json& result, const std::filesystem::path& result_file, VerifyReport& report) {
  const auto sources = judged_python_sources(result, result_file);
  std::error_code ec;
  // The result travelled without its sources (a bundle, another machine): the
  // recorded map is still tied to plugin.sha256 by the field checks.
  if (!sources || !std::filesystem::is_regular_file(sources->folder / sources->file, ec)) return;
  const std::string whose = sources->copy ? "the run's copy of its Python source " : "Python source ";
  for (const auto& d : differing_python_sources(*sources)) {
    report.reasons.push_back(
        d.found.empty()
            ? whose + (sources->folder / d.file).string() + " (plugin.source.files) is missing beside " +
                  sources->file + " or is not a regular file: the sources were changed after the run"
            : whose + (sources->folder / d.file).string() + " was changed after the run (sha256 " + d.found +
                  " != recorded plugin.source.files " + d.recorded + ")");
    report.valid = false;
  }
  if (!sources->copy || !std::filesystem::is_regular_file(sources->working_folder / sources->file, ec)) return;
  // The working files are the author's to change: said, not held against the run.
  RecordedPythonSources working = *sources;
  working.folder = sources->working_folder;
  const auto changed = differing_python_sources(working);
  if (!changed.empty())
    report.notes.push_back("the working Python source " + (working.folder / changed.front().file).string() +
                           (changed.size() > 1 ? " (and " + std::to_string(changed.size() - 1) + " more)" : "") +
                           " has changed since the run; the run is judged by its own copy in " +
                           sources->folder.string());
}

}  // namespace lra::host::verify_internal
