#include "reevaluation/python_report.h"

#include "common/json_input.h"
#include "common/sha256.h"
#include "common/text.h"
#include "common/untrusted_file.h"
#include "lra/status.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A string the sandboxed code wrote, fit to show: `renames` applied, bounded,
// invisible characters written out.
std::string shown(const json* v, size_t max, const std::vector<std::pair<std::string, std::string>>& renames = {}) {
  if (!v || !v->is_string()) return "";
  std::string s = v->get<std::string>();
  for (const auto& [from, to] : renames) {
    if (from.empty()) continue;
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  }
  return text::visible_text(s.substr(0, max)) + (s.size() > max ? " [...]" : "");
}

std::string text_at(const json& root, std::initializer_list<const char*> keys) {
  const json* v = json_at(root, keys);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

// The recorded files the sandbox's identity lists otherwise: "a.py (changed)", ...
std::string differing_files(const json& recorded, const json& sandbox) {
  std::vector<std::string> out;
  if (!recorded.is_object() || !sandbox.is_object()) return "";
  for (const auto& [rel, sha] : recorded.items()) {
    if (!sandbox.contains(rel)) out.push_back(text::visible_text(rel) + " (not imported)");
    else if (sandbox[rel] != sha) out.push_back(text::visible_text(rel) + " (other bytes)");
  }
  for (const auto& [rel, sha] : sandbox.items())
    if (!recorded.contains(rel)) out.push_back(text::visible_text(rel.substr(0, 200)) + " (imported, not recorded)");
  if (out.size() > 8) out.resize(8), out.push_back("...");
  return text::join(out, ", ");
}

}  // namespace

PythonRunCheck check_python_report(const fs::path& file, const json& result,
                                   const std::vector<std::pair<std::string, std::string>>& renames) {
  PythonRunCheck c;
  const std::string run_python = text_at(result, {"plugin", "source", "python"});
  const std::string run_torch = text_at(result, {"plugin", "source", "torch"});
  c.report = {{"recorded", {{"python", run_python}, {"torch", run_torch}}}};
  json rep;
  try {
    rep = parse_json_input(read_untrusted_file(file, kMaxPythonReportBytes));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::storage) throw;
    rep = nullptr;
  } catch (const JsonInputError&) {
    rep = nullptr;
  }
  if (!rep.is_object()) {
    c.report["sandbox"] = nullptr;
    c.facts.push_back("Python mixer: the sandbox left no readable report of its interpreter");
    return c;
  }

  // The sandbox's interpreter against the run's.
  const json* env = json_at(rep, {"environment"});
  const std::string python = env ? shown(json_at(*env, {"python"}), 64) : "";
  const std::string torch = env ? shown(json_at(*env, {"torch"}), 64) : "";
  if (!torch.empty()) {
    c.report["sandbox"] = {{"python", python}, {"torch", torch}};
    c.report["same_torch"] = torch == run_torch;
    c.facts.push_back("Python mixer: the sandbox's Python " + python + ", torch " + torch + "; the run's Python " +
                      run_python + ", torch " + run_torch + " (plugin.source)");
    if (torch != run_torch)
      c.torch_note = "the run used torch " + text::visible_text(run_torch) +
                     " (plugin.source.torch), this verifier's Python has torch " + torch;
  } else {
    const std::string why = env ? shown(json_at(*env, {"error"}), 600, renames) : "";
    c.report["sandbox"] = {{"error", why}};
    c.report["same_torch"] = nullptr;
    c.facts.push_back("Python mixer: the sandbox's Python could not be probed" + (why.empty() ? "" : ": " + why));
  }

  // The class as it opened there: the identity recomputed from the staged files.
  const json* identity = json_at(rep, {"identity"});
  const json* recorded_files = json_at(result, {"plugin", "source", "files"});
  if (identity && identity->is_object()) {
    const bool same = text_at(*identity, {"name"}) == text_at(result, {"plugin", "name"}) &&
                      text_at(*identity, {"sha256"}) == bare_sha256(text_at(result, {"plugin", "sha256"}));
    c.report["identity_matches"] = same;
    const json* files = json_at(*identity, {"source", "files"});
    if (same) {
      c.facts.push_back("Python mixer: plugin.sha256 recomputed in the sandbox from the " +
                        std::to_string(recorded_files && recorded_files->is_object() ? recorded_files->size() : 0) +
                        " staged source file(s)");
    } else {
      const std::string diff =
          recorded_files && files ? differing_files(*recorded_files, *files) : std::string();
      c.problem = "in the sandbox the class is '" + shown(json_at(*identity, {"name"}), 64) + "' with sha256 " +
                  shown(json_at(*identity, {"sha256"}), 80) + ", not the run's plugin.name and plugin.sha256" +
                  (diff.empty() ? "" : "; its sources differ from plugin.source.files: " + diff);
    }
  } else {
    c.report["identity_matches"] = nullptr;
  }
  if (c.problem.empty()) {
    if (const std::string error = shown(json_at(rep, {"error"}), 600, renames); !error.empty()) c.problem = error;
  }
  return c;
}

}  // namespace lra::host
