#include "results/run_record.h"

#include <fstream>
#include <sstream>

#include "common/json_input.h"
#include "lra/status.h"
#include "results/result.h"

namespace lra::host {
namespace {

using nlohmann::json;

constexpr const char* kWhatIsExpected = "expected a result.json written by `lrahost run`";

// Dotted-path access to result.json; every message names file and field.
class RecordReader {
 public:
  RecordReader(const json& root, std::string file) : root_(root), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(ErrorKind::data, file_ + ": " + field + ": " + what + " (" + kWhatIsExpected + ")");
  }

  const json& at(const std::string& field) const {
    const json* v = &root_;
    std::string part;
    std::istringstream parts(field);
    while (std::getline(parts, part, '.')) {
      if (!v->is_object() || !v->contains(part)) fail(field, "missing");
      v = &(*v)[part];
    }
    return *v;
  }
  std::string text(const std::string& field) const {
    const auto& v = at(field);
    if (!v.is_string()) fail(field, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
  int64_t integer(const std::string& field) const {
    const auto& v = at(field);
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))
      fail(field, "expected an integer, got " + v.dump());
    return v.get<int64_t>();
  }
  double number(const std::string& field) const {
    const auto& v = at(field);
    if (!v.is_number()) fail(field, "expected a number, got " + v.dump());
    return v.get<double>();
  }
  const json& object(const std::string& field) const {
    const auto& v = at(field);
    if (!v.is_object()) fail(field, "expected an object, got " + v.dump());
    return v;
  }

 private:
  const json& root_;
  std::string file_;
};

}  // namespace

RunRecord read_run_record(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const std::string how = "pass --run with a directory written by `lrahost run --out DIR` (it holds result.json and "
                          "model.pt)";
  if (!fs::is_directory(dir))
    throw Error(ErrorKind::data, "run directory " + dir.string() +
                                     (fs::exists(dir) ? " is not a directory" : " does not exist") + "; " + how);
  RunRecord run;
  run.dir = dir;
  run.result_file = dir / kResultFileName;
  run.model_file = dir / "model.pt";
  if (!fs::exists(run.result_file)) {
    if (fs::exists(dir / "forgetting.json"))
      throw Error(ErrorKind::usage, dir.string() + " is a forgetting-curve run (`lrahost forget`, a causal LM); the "
                                    "attention span is measured on classifier runs of `lrahost run`");
    throw Error(ErrorKind::data, dir.string() + " holds no result.json: not a finished run (a failed run leaves none, "
                                 "an interrupted one is finished with `lrahost run --resume --out DIR`); " + how);
  }
  {
    std::ifstream in(run.result_file);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      run.result = parse_json_input(ss.str());
    } catch (const JsonInputError& e) {
      throw Error(ErrorKind::data,
                  run.result_file.string() + " is not valid JSON (" + e.what() + "); " + kWhatIsExpected);
    }
  }
  const RecordReader r(run.result, run.result_file.string());
  if (const auto schema = r.text("schema"); schema != kResultSchema)
    r.fail("schema", "is '" + schema + "', not '" + kResultSchema + "'");
  run.task = r.text("task.name");
  run.plugin_name = r.text("plugin.name");
  run.plugin_file = r.text("plugin.file");
  run.plugin_sha256 = r.text("plugin.sha256");
  run.plugin_options = r.object("plugin.options");
  run.data_fingerprint = r.text("task.data_fingerprint");
  const int64_t seed = r.integer("seed");
  if (seed < 0) r.fail("seed", "negative: " + std::to_string(seed));
  run.seed = static_cast<uint64_t>(seed);

  // The model exactly as the run built it: config.model read back through the
  // manifest's own field table (manifest/manifest.h config_manifest), so no
  // field of the model (model.padding_mask was one) can be left out here.
  run.model = config_manifest(r.at("config"), run.task, run.result_file.string()).model;
  // Where the head reads; a result from before the field ran LRA's placement.
  if (run.result.contains("model") && run.result["model"].is_object() && run.result["model"].contains("summary")) {
    const std::string name = r.text("model.summary");
    const auto summary = summary_position_from_name(name);
    if (!summary) r.fail("model.summary", "is '" + name + "', expected first, after_last or mean");
    run.summary = *summary;
    run.summary_recorded = true;
  } else {
    run.summary = lra_summary_position(run.model.pooling);
  }

  for (const auto& [key, v] : r.object("task.data_params").items()) {
    if (v.is_boolean()) {
      run.data_params[key] = v.get<bool>();
    } else if (v.is_number_integer()) {
      run.data_params[key] = v.get<int64_t>();
    } else if (v.is_number()) {
      run.data_params[key] = v.get<double>();
    } else if (v.is_string()) {
      run.data_params[key] = v.get<std::string>();
    } else {
      r.fail("task.data_params." + key, "expected a scalar, got " + v.dump());
    }
  }

  if (!fs::exists(run.model_file))
    throw Error(ErrorKind::data, run.model_file.string() + " is missing: the span needs the trained parameters that "
                                 "`lrahost run` saves as model.pt beside result.json; train the run again with this "
                                 "lrahost (or restore the file)");
  return run;
}

std::map<std::string, std::string> option_texts(const nlohmann::json& options) {
  std::map<std::string, std::string> given;
  for (const auto& [key, v] : options.items()) given[key] = v.is_string() ? v.get<std::string>() : v.dump();
  return given;
}

std::map<std::string, std::string> recorded_option_texts(const RunRecord& run) { return option_texts(run.plugin_options); }

}  // namespace lra::host
