// Which code runs for one run of a bundle (reevaluation/run_code.h).
#include "reevaluation/run_code.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/atomic_file.h"
#include "common/json_input.h"
#include "common/sha256.h"
#include "common/text.h"
#include "lra/status.h"
#include "plugins/loader.h"
#include "reevaluation/bundle_source.h"
#include "reevaluation/judged_code.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

bool choose_run_code(const RunContext& ctx, const json& result, const std::string& division, RunReevaluation& r,
                 SubmittedPlugin& judged, bool& same_build) {
  const SubmittedPlugin& submitted = ctx.submitted;
  const std::string name = json_text_at(result, {"plugin", "name"});
  const std::string shown = text::visible_text(name.substr(0, 64));
  const auto builtin = recorded_builtin_mixer(result);
  judged = submitted;
  same_build = true;
  switch (judged_code({submitted.python.has_value(), !submitted.source_folder.empty(), builtin.has_value(),
                       division == "closed"})) {
    case JudgedCode::python_sources:
      r.report["code"] = {{"kind", "python sources"}};
      return true;
    case JudgedCode::refused:
      r.reasons.push_back(closed_binary_refusal(shown));
      return false;
    case JudgedCode::submitted_binary:
      r.report["code"] = {{"kind", "submitted binary"}, {"sha256", submitted.sha256()}};
      r.facts.push_back("compiled mixer without its source: the submitted .so ran (an open run may; a closed "
                        "entry's compiled mixer is re-evaluated from its source)");
      return true;
    case JudgedCode::host_builtin: {
      const fs::path own = builtin_plugin_dir() / ("lra_mixer_" + *builtin + ".so");
      const auto names = builtin_mixer_names();
      std::error_code ec;
      if (!fs::is_regular_file(own, ec) || std::find(names.begin(), names.end(), *builtin) == names.end()) {
        r.reasons.push_back("the result records the built-in mixer '" + shown +
                            "', which this verifier's lrahost does not have");
        return false;
      }
      judged.so = own;
      const std::string sha = sha256_file(own);
      same_build = sha == submitted.sha256();
      r.report["code"] = {{"kind", "host built-in"}, {"sha256", sha}};
      r.facts.push_back("built-in mixer '" + shown + "': this verifier's own build of it ran" +
                        (same_build ? " (the same bytes as the submitted .so)"
                                    : " (another build than the submitted .so: the tolerance applies)"));
      return true;
    }
    case JudgedCode::built_from_source: {
      const SourceBuild& b = ctx.build_source();
      {
        std::error_code ec;
        fs::create_directories(ctx.log_dir, ec);
        try {
          write_file_atomic(ctx.log_dir / (r.run + "-build.log"), b.log);
        } catch (const Error&) {
        }
      }
      std::map<std::string, std::string> files;
      for (auto it = fs::recursive_directory_iterator(submitted.source_folder); it != fs::recursive_directory_iterator();
           ++it)
        if (it->is_regular_file())
          files[fs::relative(it->path(), submitted.source_folder).generic_string()] = sha256_file(it->path());
      r.report["code"] = {{"kind", "built from source"},
                          {"source_sha256", source_folder_sha256(files)},
                          {"source_files", files.size()},
                          {"recipe", b.recipe},
                          {"build_seconds", b.seconds},
                          {"sha256", b.failure ? json(nullptr) : json(b.sha256)}};
      if (b.failure) {
        r.reasons.push_back(*b.failure);
        return false;
      }
      judged.so = b.so;
      same_build = b.sha256 == submitted.sha256();
      char line[160];
      std::snprintf(line, sizeof line, "compiled mixer built from its bundled source (%zu files) in the sandbox in %.0f s",
                    files.size(), b.seconds);
      r.facts.push_back(std::string(line) + ": the built .so (sha256 " + b.sha256 + ") ran, not the submitted one" +
                        (same_build ? " (they are byte-identical)" : " (another build: the tolerance applies)"));
      return true;
    }
  }
  return false;
}

}  // namespace lra::host
