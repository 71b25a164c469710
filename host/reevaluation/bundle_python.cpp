#include "reevaluation/bundle_python.h"

#include <cctype>
#include <regex>

#include "common/json_input.h"
#include "common/python_source_files.h"
#include "common/python_sources.h"
#include "common/sha256.h"
#include "lra/status.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool is_folder_sha(const std::string& s) {
  static const std::regex hex("[0-9a-f]{64}");
  return std::regex_match(s, hex);
}

// A class the host can name a plugin after and Python can define.
bool is_class_name(const std::string& s) {
  static const std::regex identifier("[A-Za-z_][A-Za-z0-9_]{0,62}");
  return std::regex_match(s, identifier);
}

std::string lower_sha(const json& v) {
  std::string s = v.is_string() ? bare_sha256(v.get<std::string>()) : std::string();
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}


}  // namespace

std::optional<BundlePythonPlugin> parse_bundle_python_plugin(const std::string& spec) {
  const auto parts = split_python_spec(spec);
  if (!parts || parts->first.rfind("plugins/", 0) != 0) return std::nullopt;
  const std::string rest = parts->first.substr(8);  // <sha256>/<file>
  const size_t slash = rest.find('/');
  if (slash == std::string::npos) return std::nullopt;
  BundlePythonPlugin p{rest.substr(0, slash), rest.substr(slash + 1), parts->second};
  // The class's file sits in the folder itself (the bridge records it by its base name).
  if (!is_folder_sha(p.sha256) || p.file.find('/') != std::string::npos || !is_bundle_python_path(p.file) ||
      !is_class_name(p.cls))
    return std::nullopt;
  return p;
}

bool is_bundle_python_entry(const std::string& name) {
  if (name.rfind("plugins/", 0) != 0 || name.size() < 8 + 64 + 2 || name[8 + 64] != '/') return false;
  return is_folder_sha(name.substr(8, 64)) && is_bundle_python_path(name.substr(8 + 64 + 1));
}

std::optional<std::string> python_folder_problem(const json& result, const std::string& run,
                                                 const BundlePythonPlugin& p,
                                                 const std::map<std::string, std::string>& in_folder) {
  const std::string where = run + "/result.json";
  const json* files = json_at(result, {"plugin", "source", "files"});
  if (!files || !files->is_object() || files->empty())
    return where + " records no plugin.source.files, so the Python sources in " + p.folder() +
           " cannot be tied to it";
  // The folder's name is the identity verify recomputes from the recorded map.
  const std::string from_map = python_sources_sha256(*files);
  if (from_map != p.sha256)
    return p.folder() + " is not named by the SHA-256 of " + where + "'s plugin.source.files (" + from_map + ")";
  if (lower_sha(json_text_at(result, {"plugin", "sha256"})) != p.sha256)
    return p.folder() + " is not " + where + "'s plugin.sha256 (" + json_text_at(result, {"plugin", "sha256"}) + ")";
  if (json_text_at(result, {"plugin", "source", "file"}) != p.file ||
      json_text_at(result, {"plugin", "source", "class"}) != p.cls || json_text_at(result, {"plugin", "name"}) != p.cls)
    return "bundle.json names " + p.spec() + " for " + run + ", whose result records class '" +
           json_text_at(result, {"plugin", "source", "class"}) + "' in '" + json_text_at(result, {"plugin", "source", "file"}) +
           "' (plugin.source)";
  for (const auto& [rel, recorded] : files->items()) {
    const auto it = in_folder.find(rel);
    if (it == in_folder.end())
      return where + " records the Python source '" + rel + "' (plugin.source.files), which " + p.folder() +
             " does not hold";
    const std::string want = lower_sha(recorded);
    if (it->second != want)
      return "'" + p.folder() + "/" + rel + "' has SHA-256 " + it->second + ", " + where + " records " +
             (want.empty() ? std::string("none") : want) +
             " for it (plugin.source.files): the source was changed after the run";
  }
  for (const auto& [rel, sha] : in_folder)
    if (!files->contains(rel))
      return "'" + p.folder() + "/" + rel + "' is not one of " + where + "'s plugin.source.files";
  return std::nullopt;
}

PythonPack python_pack(const json& result, const fs::path& result_file) {
  // The run's own copy when it kept one: the working files may have moved on.
  const auto sources = judged_python_sources(result, result_file);
  if (!sources)
    throw Error(ErrorKind::data, result_file.string() + ": its plugin.source or plugin.file cannot be read as a "
                                                        "Python mixer's sources");
  PythonPack pack;
  pack.plugin = {python_sources_sha256(*json_at(result, {"plugin", "source", "files"})), sources->file, sources->cls};
  if (!parse_bundle_python_plugin(pack.plugin.spec()))
    throw Error(ErrorKind::usage, result_file.string() + ": its Python mixer " + sources->file + ":" + sources->cls +
                                      " has a file or class name a bundle cannot carry (letters, digits, '_', '-', "
                                      "'.'; a .py file; a Python identifier as the class); rename it and run again");
  for (const auto& [rel, sha] : sources->files) {
    if (!is_bundle_python_path(rel))
      throw Error(ErrorKind::usage,
                  result_file.string() + ": its Python source '" + rel + "' (plugin.source.files) has a name a bundle "
                  "cannot carry: at most " + std::to_string(kMaxBundlePythonDepth) + " folders deep and " +
                  std::to_string(kMaxBundlePythonPathBytes) + " bytes of letters, digits, '_', '-' and '.', not "
                  "starting with '.', ending in .py; rename it and run again");
    pack.files.push_back({pack.plugin.folder() + "/" + rel, sources->folder / rel, sha});
  }
  // Checked before anything is written: the bundle must carry the sources that produced the result.
  for (const auto& d : differing_python_sources(*sources)) {
    const fs::path file = sources->folder / d.file;
    if (d.found.empty())
      throw Error(ErrorKind::usage, result_file.string() + ": its Python source " + file.string() +
                                        " (plugin.source.files) is missing; restore the sources the run used there");
    throw Error(ErrorKind::usage, result_file.string() + ": its Python source " + file.string() +
                                      " has changed since the run (sha256 " + d.found +
                                      ", plugin.source.files records " + d.recorded +
                                      "); a bundle must carry the sources that produced the result");
  }
  for (const auto& f : pack.files) {
    std::error_code ec;
    if (static_cast<int64_t>(fs::file_size(f.source, ec)) > kMaxPythonSourceBytes)
      throw Error(ErrorKind::usage, result_file.string() + ": its Python source " + f.source.string() +
                                        " is larger than the " + std::to_string(kMaxPythonSourceBytes) +
                                        " bytes a bundle carries per source file");
  }
  return pack;
}

}  // namespace lra::host
