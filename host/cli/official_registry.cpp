#include "cli/official_registry.h"

#include "common/sha256.h"

namespace lra::host {

std::vector<OfficialManifest> registry_official(const std::string& task) {
  std::vector<OfficialManifest> out;
  for (const auto& r : released_manifests())
    if (r.task == task) out.push_back({r.version, r.sha256, r.note, r.superseded_by});
  return out;
}

std::optional<std::vector<int64_t>> registry_trial_seeds(const std::string& task, const std::string& manifest_sha256) {
  if (manifest_sha256.empty()) {
    const auto current = current_release(task);
    if (!current) return std::nullopt;
    return release_trial_seeds(task, current->sha256);
  }
  return release_trial_seeds(task, manifest_sha256);
}

RunChoices run_choices(const std::string& task, const std::string& manifest_label, const std::string& manifest_text,
                       std::optional<ReleasedManifest>* release) {
  const std::string sha = sha256_hex(manifest_text);
  *release = find_release(task, sha);
  const std::optional<ReleasedManifest> compared = *release ? *release : current_release(task);
  RunChoices c;
  c.task = task;
  c.manifest_label = manifest_label;
  c.manifest_sha256 = sha;
  if (compared) {
    c.official_name = "manifest " + compared->file + " (release " + compared->version + ")";
    c.official_sha256 = compared->sha256;
  }
  return c;
}

}  // namespace lra::host
