#include "runs/official_registry.h"

#include <map>
#include <mutex>

#include <torch/utils.h>

#include "common/sha256.h"
#include "lra/task.h"
#include "manifest/embedded.h"
#include "manifest/manifest.h"
#include "manifest/official_data.h"
#include "model/backbone.h"
#include "model/random_state.h"
#include "model/task_shape.h"

namespace lra::host {
namespace {

// The reference Transformer of an LRA manifest on its task's shape: the base
// of a closed result's parameter budget, counted here so that verify never
// takes it from the file. Built once per manifest; the global generator's
// state is put back, so verifying does not move a later run's random stream.
int64_t counted_reference_params(const std::string& sha256, const std::string& task, const Manifest& m) {
  static std::mutex mu;
  static std::map<std::string, int64_t> counted;
  const std::lock_guard<std::mutex> lock(mu);
  if (const auto it = counted.find(sha256); it != counted.end()) return it->second;
  const TaskShape shape = lra_task_shape(task);
  const PreservedRandomState keep;
  torch::NoGradGuard no_grad;
  const int64_t n = count_parameters(
      *Classifier(BackboneSpec{m.model, shape.vocab_size, shape.num_classes, 0, shape.paired}, make_reference_attention));
  counted[sha256] = n;
  return n;
}

// The reference Transformer of a configuration a result records, on the
// official data's shape as its official-data row states it (a task outside
// LRA's table): what a closed result on a [grid] protocol is budgeted from.
// Counted once per distinct model configuration.
// The setting a recorded configuration stands on ("baseline" without [settings]).
std::string config_setting(const nlohmann::json& config) {
  const auto it = config.find("setting");
  return it != config.end() && it->is_string() ? it->get<std::string>() : std::string(kBaselineSetting);
}

// The reference Transformer at a recorded configuration (a grid point, a
// setting) on the shape its official-data row states; -1 when there is no row
// for its setting or the host cannot build it.
int64_t counted_reference_params_at(const std::string& release, const std::string& task, const nlohmann::json& config) {
  static std::mutex mu;
  static std::map<std::string, int64_t> counted;
  const std::string setting = config_setting(config);
  const std::string key = release + "/" + task + "/" + setting + "/" + config.value("model", nlohmann::json()).dump();
  const std::lock_guard<std::mutex> lock(mu);
  if (const auto it = counted.find(key); it != counted.end()) return it->second;
  int64_t n = -1;
  try {
    const auto shape = find_official_data(release, task, setting);
    if (shape && shape->vocab_size > 0) {
      const Manifest m = config_manifest(config, task, "the result's config");
      const PreservedRandomState keep;
      torch::NoGradGuard no_grad;
      BackboneSpec spec{m.model, shape->vocab_size, shape->num_classes, 0, false};
      spec.per_position = shape->sequence;
      if (shape->readout == "from_last_state") spec.readout = lra::SequenceReadout::from_last_state;
      n = count_parameters(*Classifier(spec, make_reference_attention));
    }
  } catch (const std::exception&) {
    n = -1;  // a configuration the host cannot build: the config check has already said why
  }
  counted[key] = n;
  return n;
}

}  // namespace

std::vector<OfficialManifest> registry_official(const std::string& task) {
  std::vector<OfficialManifest> out;
  for (const auto& r : released_manifests()) {
    if (r.task != task) continue;
    OfficialManifest m{r.version, r.sha256, r.note, r.superseded_by};
    m.protocol = r.protocol;
    // What the protocol fixes: the configuration run records, and the data.
    const EmbeddedFile* f = find_embedded(r.file);
    const Manifest manifest = parse_manifest(f->text, "builtin:" + r.file);
    m.config = to_json(manifest);
    if (r.protocol == "lra-v1" || r.protocol == "lra-spt-v1") m.reference_params = counted_reference_params(r.sha256, task, manifest);
    else if (const auto d = find_official_data(r.version, task); d && d->vocab_size > 0)
      m.reference_params_at = [release = r.version, task](const nlohmann::json& config) {
        return counted_reference_params_at(release, task, config);
      };
    // What a key is when a manifest does not set it (results may predate a key).
    m.defaults = to_json(Manifest{});
    if (const auto d = find_official_data(r.version, task)) {
      m.train_examples = d->train;
      m.val_examples = d->val;
      m.test_examples = d->test;
      m.data_fingerprint = d->fingerprint;
    }
    // Each of its [settings] has data of its own.
    for (const auto& s : manifest.settings)
      if (const auto d = find_official_data(r.version, task, s.name))
        m.setting_data[s.name] = {d->train, d->val, d->test, d->fingerprint};
    out.push_back(std::move(m));
  }
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
                       std::optional<ReleasedManifest>* release, const std::string& protocol) {
  const std::string sha = sha256_hex(manifest_text);
  *release = find_release(task, sha);
  const std::optional<ReleasedManifest> compared = *release ? *release : current_release(task, protocol);
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

bool is_lra_release_source(const std::string& source) { return source.rfind(lra::kLraReleaseSource, 0) == 0; }

std::optional<std::string> data_differs_from_official(const ReleasedManifest& release, const std::string& setting,
                                                      int64_t train, int64_t val, int64_t test,
                                                      const std::string& fingerprint, bool lra_release_files) {
  const auto d = find_official_data(release.version, release.task, setting);
  if (!d) return std::nullopt;  // a release without a data row: the test of the table refuses that
  const std::string official = "the official " + release.task + " data (release " + release.version +
                               (setting.empty() || setting == kBaselineSetting ? "" : ", setting " + setting) + ")";
  const std::pair<const char*, std::pair<int64_t, int64_t>> splits[] = {
      {"train", {train, d->train}}, {"val", {val, d->val}}, {"test", {test, d->test}}};
  for (const auto& [name, counts] : splits)
    if (counts.first != counts.second)
      return "the data are not the official data: task.examples." + std::string(name) + " is " +
             std::to_string(counts.first) + ", " + official + " have " + std::to_string(counts.second);
  if (!d->fingerprint.empty() && !lra_release_files && fingerprint != d->fingerprint)
    return "the data are not the official data: their fingerprint " + fingerprint + " is not that of " + official +
           ", " + d->fingerprint;
  return std::nullopt;
}

}  // namespace lra::host
