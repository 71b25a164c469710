// verify's first stages: the schema, then every field of result.json present
// (when required), of its type, and in its range.
#include "results/verify_checks.h"

#include "common/plugin_identity.h"
#include "common/python_source_files.h"
#include "common/python_sources.h"
#include "common/json_input.h"
#include "results/result.h"

namespace lra::host::verify_internal {
namespace {

using nlohmann::json;

void check_host_section(Checker& c) {
  if (!c.require("host", kObject)) return;
  for (const char* k : {"host.version", "host.git_revision", "host.build_type", "host.compiler",
                        "host.torch_version"}) {
    c.optional(k, kString);
  }
  c.optional("host.git_dirty", kBool | kNull);
  c.optional("host.cuda_version", kString | kNull);
}

// plugin.file of a Python mixer is the host's "DIR/FILE.py:CLASS": DIR
// absolute (where verify and submit find the sources), FILE plugin.source.file
// (one of the recorded files), CLASS plugin.source.class and plugin.name.
void check_python_file_field(Checker& c, const json& files, const json* source_file, const json* cls) {
  if (!source_file || !cls) return;  // reported already
  const json* file = json_at(c.root(), {"plugin", "file"});
  const json* name = json_at(c.root(), {"plugin", "name"});
  if (!files.contains(source_file->get<std::string>()))
    c.fail("plugin.source.file " + show(*source_file) + " is not one of plugin.source.files");
  if (name && name->is_string() && *name != *cls)
    c.fail("plugin.name " + show(*name) + " is not plugin.source.class " + show(*cls));
  if (!file || !file->is_string()) return;  // null: no file to find (a wrong type is reported already)
  const auto spec = split_python_spec(file->get<std::string>());
  const std::filesystem::path path = spec ? std::filesystem::path(spec->first) : std::filesystem::path();
  if (!spec || !path.is_absolute() || path.filename().string() != source_file->get<std::string>() ||
      spec->second != cls->get<std::string>())
    c.fail("plugin.file " + show(*file) + " is not DIR/" + source_file->get<std::string>() + ":" +
           cls->get<std::string>() + " with an absolute DIR (plugin.source.file and plugin.source.class)");
}

// A Python mixer's plugin.source: bounded strings, a map of source files to
// SHA-256s, and plugin.sha256 recomputed from that map (not trusted).
void check_python_source(Checker& c) {
  const json* source = c.optional("plugin.source", kObject | kNull);
  if (!source || source->is_null()) return;
  auto bounded = [&](const char* field, std::size_t max) {
    const json* v = c.require(field, kString);
    if (v && v->get_ref<const std::string&>().size() > max)
      c.fail(std::string(field) + " is longer than " + std::to_string(max) + " bytes");
    return v;
  };
  if (const json* lang = bounded("plugin.source.language", 16); lang && *lang != "python")
    c.fail("plugin.source.language " + show(*lang) + " is not \"python\", the only language with sources");
  const json* cls = bounded("plugin.source.class", kMaxPluginNameBytes);
  const json* source_file = bounded("plugin.source.file", 255);
  bounded("plugin.source.python", 64);
  bounded("plugin.source.torch", 64);
  const json* files = c.require("plugin.source.files", kObject);
  if (!files) return;
  constexpr std::size_t kMaxFiles = 1000;
  if (files->size() > kMaxFiles || files->empty()) {
    c.fail("plugin.source.files lists " + std::to_string(files->size()) + " files; expected 1 to " +
           std::to_string(kMaxFiles));
    return;
  }
  bool well_formed = true;
  for (const auto& [path, sha] : files->items()) {
    // Inside the class's folder: verify and submit read these files there.
    if (path.size() > 4096 || !is_relative_inside(path) || !sha.is_string() ||
        !normalise_sha256(sha.get<std::string>()))
      well_formed = false, c.fail("plugin.source.files[" + quoted(path.substr(0, 80)) + "] must map a relative path to a SHA-256, got " +
             show(sha));
  }
  check_python_file_field(c, *files, source_file, cls);
  if (const json* sha = c.optional("plugin.sha256", kString); sha && well_formed) {
    const std::string want = python_sources_sha256(*files);
    if (normalise_sha256(sha->get<std::string>()) != want)
      c.fail("plugin.sha256 " + sha->get<std::string>() + " is not the SHA-256 of plugin.source.files (" + want +
             "): the recorded sources were changed");
  }
}

// Returns plugin.params.total.
const json* check_plugin_section(Checker& c) {
  const json* total = nullptr;
  if (!c.require("plugin", kObject)) return total;
  // The descriptor's lengths (common/plugin_identity.h): a host only writes
  // names that fit them, and a forged 10 MB name would fill every page. The
  // alphabet is enforced where a plugin is loaded; in a result only the
  // length is, since every page escapes a name as text anyway.
  auto too_long = [&](const char* field, std::size_t max) {
    if (const json* v = c.require(field, kString); v && v->get_ref<const std::string&>().size() > max)
      c.fail(std::string(field) + " is " + std::to_string(v->get_ref<const std::string&>().size()) +
             " bytes, longer than any plugin's can be (" + std::to_string(max) + ")");
  };
  too_long("plugin.name", kMaxPluginNameBytes);
  too_long("plugin.version", kMaxPluginVersionBytes);
  c.optional("plugin.file", kString | kNull);
  check_sha256_field(c, "plugin.sha256", c.require("plugin.sha256", kString));
  c.require("plugin.options", kObject);
  if (c.require("plugin.params", kObject)) {
    total = c.require("plugin.params.total", kInteger);
    if (const json* mixer = c.optional("plugin.params.mixer", kInteger | kNull);
        mixer && total && mixer->is_number()) {
      const auto m = as_i64(mixer), t = as_i64(total);
      if (m && t && (*m < 0 || *m > *t)) {
        c.fail("plugin.params.mixer " + show(*mixer) + " must be between 0 and plugin.params.total " +
               show(*total));
      }
    }
  }
  c.array_of("plugin.capabilities", kString, false);
  check_python_source(c);
  return total;
}

void check_task_section(Checker& c, ResultFields& f) {
  if (!c.require("task", kObject)) return;
  f.task_name = c.require("task.name", kString);
  c.require("task.manifest", kString);
  f.manifest_sha = c.require("task.manifest_sha256", kString);
  check_sha256_field(c, "task.manifest_sha256", f.manifest_sha);
  f.preset = c.optional("task.preset", kString | kNull);
  c.require("task.data_fingerprint", kString | kObject);
  // Each split's fingerprint (results before they were recorded lack them).
  if (c.optional("task.split_fingerprints", kObject))
    for (const char* k : {"task.split_fingerprints.train", "task.split_fingerprints.val", "task.split_fingerprints.test"})
      check_sha256_field(c, k, c.require(k, kString));
  if (c.require("task.examples", kObject))
    for (const char* k : {"task.examples.train", "task.examples.val", "task.examples.test"})
      check_non_negative(c, k, c.require(k, kInteger));
}

void check_rules_section(Checker& c, ResultFields& f) {
  if (!c.require("rules", kObject)) return;
  f.reference_params = c.require("rules.reference_params", kInteger);
  f.budget_ratio = c.require("rules.param_budget_ratio", kNumber);
  f.budget = c.require("rules.param_budget", kInteger);
}

void check_metrics_section(Checker& c) {
  if (!c.require("metrics", kObject)) return;
  for (const char* k : {"metrics.test_accuracy", "metrics.best_val_accuracy",
                        "metrics.final_train_accuracy"}) {
    check_accuracy(c, k, c.require(k, kNumber));
  }
  check_accuracy(c, "metrics.majority_class_rate",
                 c.optional("metrics.majority_class_rate", kNumber | kNull));
  check_non_negative(c, "metrics.final_train_loss", c.require("metrics.final_train_loss", kNumber));
  check_non_negative(c, "metrics.best_val_step", c.optional("metrics.best_val_step", kInteger | kNull));
  // A sequence task's (SDK 1.4): accuracies count scored positions.
  if (const json* scored = c.optional("metrics.scored", kString)) {
    if (*scored != "position") c.fail("metrics.scored is " + show(*scored) + ", expected \"position\" or absent");
    check_accuracy(c, "metrics.test_example_accuracy", c.require("metrics.test_example_accuracy", kNumber));
    check_non_negative(c, "metrics.test_positions", c.require("metrics.test_positions", kInteger));
    c.array_of("metrics.test_cells", kObject, true);
    // SDK 1.5: present only for a task read from the last state.
    if (const json* readout = c.optional("metrics.readout", kString); readout && *readout != "from_last_state")
      c.fail("metrics.readout is " + show(*readout) + ", expected \"from_last_state\" or absent");
  }
}

void check_timing_section(Checker& c) {
  if (!c.require("timing", kObject)) return;
  for (const char* k : {"timing.wall_seconds", "timing.train_seconds", "timing.steps_per_second",
                        "timing.peak_memory_bytes"}) {
    check_non_negative(c, k, c.optional(k, kNumber | kNull));
  }
}

}  // namespace

void check_schema(Checker& c) {
  if (const json* s = c.require("schema", kString); s && *s != kResultSchema) {
    c.fail("schema is " + show(*s) + ", expected " + quoted(kResultSchema) +
           " (written by another version of lrahost?)");
  }
}

ResultFields check_result_fields(Checker& c) {
  ResultFields f;
  f.division = c.require("division", kString);
  f.division_reasons = c.array_of("division_reasons", kString, true);
  f.valid = c.require("valid", kBool);
  f.invalid_reasons = c.array_of("invalid_reasons", kString, true);

  check_host_section(c);
  c.require("system", kObject);
  f.params_total = check_plugin_section(c);
  check_task_section(c, f);
  check_rules_section(c, f);

  c.require("seed", kInteger);
  f.overrides = c.array_of("overrides", kString, true);
  c.require("config", kObject);

  check_metrics_section(c);
  // A sequence task's measured decoding state (optional).
  if (const json* st = c.optional("state_size", kObject)) {
    if (const json* measured = c.require("state_size.measured", kBool); measured && measured->get<bool>()) {
      if (const json* per = c.array_of("state_size.per_length", kObject, true))
        for (const auto& p : *per)
          if (!p.contains("length") || !p["length"].is_number_integer() || !p.contains("bytes") ||
              !p["bytes"].is_number_integer() || p["bytes"].get<int64_t>() < 0)
            c.fail("state_size.per_length holds " + show(p) + ", expected {\"length\": integer, \"bytes\": integer >= 0}");
    }
    (void)st;
  }
  c.array_of("history", kObject, true);
  check_timing_section(c);
  c.array_of("command_line", kString, true);
  c.require("started_at", kString);
  c.require("finished_at", kString);
  return f;
}

}  // namespace lra::host::verify_internal
