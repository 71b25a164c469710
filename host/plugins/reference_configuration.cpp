#include "plugins/reference_configuration.h"

#include "lra/status.h"

namespace lra::host {

using nlohmann::json;

ReferenceConfigurationRun apply_reference_configuration(const std::string& name, const LoadedPlugin& mixer,
                                                        const std::string& task, Manifest& manifest,
                                                        std::vector<std::string>* overrides) {
  ReferenceConfigurationRun c;
  c.name = name;
  c.table = &reference_configuration(name);
  const std::string& plugin = mixer.descriptor.name;
  // A paper's configuration is of the paper's mixers: the host's own plugin
  // of that name, not a third-party file that happens to share it.
  if (!c.table->has_mixer(plugin) || !is_builtin_plugin_file(mixer.descriptor.file)) {
    std::string known;
    for (const auto& m : c.table->mixers()) known += (known.empty() ? "" : ", ") + m;
    throw Error(ErrorKind::usage, "--reference " + name + ": " + c.table->label() + " (" + c.table->file() +
                                      ") covers the built-in mixers " + known + "; '" + plugin + "' (" +
                                      mixer.descriptor.file.string() +
                                      ") is not one of them (run it without --reference)");
  }
  const auto entry = c.table->entry(plugin, task, false);
  if (!entry) {
    std::string tasks;
    for (const auto& t : c.table->tasks()) tasks += (tasks.empty() ? "" : ", ") + t;
    throw Error(ErrorKind::usage, "--reference " + name + ": " + c.table->file() + " covers the tasks " + tasks +
                                      ", not '" + task + "'");
  }
  c.entry = *entry;
  for (const auto& [key, s] : c.entry.settings) {
    if (key.rfind("mixer.", 0) == 0) {
      c.mixer_options[key.substr(6)] = setting_text(s.value);
      continue;
    }
    const std::string assignment = key + "=" + setting_text(s.value);
    try {
      apply_override(manifest, assignment);
    } catch (const Error& e) {
      // The table ships inside the host: a key the manifest refuses is a broken build.
      throw Error(ErrorKind::internal, "reference configuration " + c.table->file() + ", entry " + c.entry.label() +
                                           ": " + assignment + " is refused (" + e.what() + "); fix the table");
    }
    c.manifest_overrides.push_back(assignment);
    overrides->push_back(assignment);
  }
  return c;
}

std::map<std::string, std::string> with_configuration_options(const ReferenceConfigurationRun& c,
                                                               const std::map<std::string, std::string>& given) {
  auto out = c.mixer_options;
  for (const auto& [k, v] : given) out[k] = v;  // the user's --set wins
  return out;
}

json reference_configuration_record(const ReferenceConfigurationRun& c, const json& config, const json& options) {
  return {{"name", c.name},
          {"label", c.table->label()},
          {"table", c.table->file()},
          {"sha256", c.table->sha256()},
          {"entry", c.entry.label()},
          {"settings", c.entry.values()},
          {"changed", configuration_changes(c.entry, config, options)},
          {"conformance_not_checked", c.entry.conformance_not_checked}};
}

}  // namespace lra::host
