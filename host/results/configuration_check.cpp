// verify's reference-configuration stage: a result made with `run
// --reference` names a configuration this host compiles in, by its bytes;
// the entry is the one for the result's plugin and task, with the settings
// the table gives; the keys it calls changed are exactly those whose recorded
// value (config, plugin.options) is not the entry's; and the result is open.
// Nothing is taken from the record that the table and the result's own
// config can settle. Also the reference settings stage: a built-in mixer's
// recorded table is the one its manifest named.
#include "results/verify_checks.h"

#include "common/json_input.h"
#include "reference/reference_mixers.h"

namespace lra::host::verify_internal {

using nlohmann::json;

std::string check_reference_configuration(Checker& c, const json& result) {
  const json* record = c.optional("reference_configuration", kObject | kNull);
  if (!record || record->is_null()) return "";
  const json* table_name = c.require("reference_configuration.table", kString);
  const json* sha = c.require("reference_configuration.sha256", kString);
  const json* entry_label = c.require("reference_configuration.entry", kString);
  const json* settings = c.require("reference_configuration.settings", kObject);
  const json* changed = c.array_of("reference_configuration.changed", kString, true);
  if (!table_name || !sha || !entry_label || !settings || !changed) return "";
  const std::string file = table_name->get<std::string>();
  const ReferenceTable* table = find_reference_table(file);
  if (!table || !table->is_configuration()) {
    c.fail("reference_configuration.table " + quoted(file) +
           " is not a reference configuration this host compiles in (a result from a newer host, or a made-up name)");
    return "";
  }
  bool ok = true;
  auto fail = [&](std::string why) {
    c.fail("reference_configuration: " + std::move(why));
    ok = false;
  };
  if (sha->get<std::string>() != table->sha256())
    fail("sha256 " + sha->get<std::string>() + " is not that of " + file + " (" + table->sha256() + ")");
  const json* plugin = json_at(result, {"plugin", "name"});
  const json* task = json_at(result, {"task", "name"});
  if (!plugin || !plugin->is_string() || !task || !task->is_string()) return "";  // the field stage said so
  const auto entry = table->entry(plugin->get<std::string>(), task->get<std::string>(), false);
  if (!entry) {
    fail(file + " has no entry for plugin " + quoted(plugin->get<std::string>()) + " on task " +
         quoted(task->get<std::string>()));
    return "";
  }
  if (entry_label->get<std::string>() != entry->label())
    fail("entry " + quoted(entry_label->get<std::string>()) + " is not the result's plugin and task (" +
         entry->label() + ")");
  if (*settings != entry->values())
    fail("settings " + show(*settings) + " are not " + file + "'s entry " + entry->label() + " " +
         show(entry->values()));
  const json* config = json_at(result, {"config"});
  const json* options = json_at(result, {"plugin", "options"});
  const auto differs = configuration_changes(*entry, config ? *config : json(), options ? *options : json());
  if (*changed != json(differs))
    fail("changed is " + show(*changed) + ", but the recorded config and plugin.options differ from the entry in " +
         show(json(differs)));
  const json* division = json_at(result, {"division"});
  if (division && *division == "closed")
    fail("a result under " + table->label() + " is open (the closed division keeps one backbone for every mixer)");
  // In words from what was checked, not from the record's own label.
  return ok ? describe_reference_configuration(
                  {{"label", table->label()}, {"table", file}, {"entry", entry->label()}, {"changed", differs}})
            : "";
}

void check_reference_settings_table(Checker& c, const json& result) {
  const json* named = json_at(result, {"config", "rules", "reference_settings"});
  const json* claimed = json_at(result, {"plugin", "reference_settings"});
  if (!named || !named->is_string() || !claimed || !claimed->is_object()) return;
  const std::string file = named->get<std::string>();
  const ReferenceTable* table = find_reference_table(file);
  if (!table) return;  // the config stage names a table this host does not compile in
  const json* claimed_table = json_at(*claimed, {"table"});
  const json* claimed_sha = json_at(*claimed, {"sha256"});
  if (!claimed_table || *claimed_table != file)
    c.fail("plugin.reference_settings.table is " + (claimed_table ? show(*claimed_table) : std::string("missing")) +
           ", but the manifest as run (config.rules.reference_settings) names " + quoted(file) +
           ": the run applies the table its manifest names");
  else if (!claimed_sha || *claimed_sha != table->sha256())
    c.fail("plugin.reference_settings.sha256 " + (claimed_sha ? show(*claimed_sha) : std::string("missing")) +
           " is not that of " + file + " (" + table->sha256() + ")");
}

}  // namespace lra::host::verify_internal
