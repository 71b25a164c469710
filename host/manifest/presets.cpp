#include "manifest/presets.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/text.h"
#include "manifest/suites.h"

namespace lra::host {
namespace {

constexpr std::string_view kOfficialDir = "lra-v1/";
constexpr std::string_view kSmokeDir = "smoke/";
constexpr std::string_view kForgettingDir = "forgetting-v1/";
constexpr std::string_view kSptOfficialDir = "lra-spt-v1/";
constexpr std::string_view kSptSmokeDir = "smoke-spt/";
constexpr std::string_view kExt = ".toml";

std::string_view preset_dir(const std::string& preset, const std::string& protocol) {
  check_protocol(protocol);
  const bool spt = protocol == "spt";
  if (preset == "official") return spt ? kSptOfficialDir : kOfficialDir;
  if (preset == "smoke") return spt ? kSptSmokeDir : kSmokeDir;
  throw Error(ErrorKind::usage,
              "unknown preset '" + preset + "' (valid presets: " + text::join(preset_names()) + ")");
}

}  // namespace

const std::vector<std::string>& protocol_names() {
  static const std::vector<std::string> names = {"scratch", "spt"};
  return names;
}

void check_protocol(const std::string& protocol) {
  const auto& names = protocol_names();
  if (std::find(names.begin(), names.end(), protocol) == names.end())
    throw Error(ErrorKind::usage, "unknown protocol '" + protocol + "' (valid protocols: " + text::join(names) +
                                      "; scratch = LRA from scratch, spt = self-pretraining first)");
}

std::string release_protocol(const std::string& protocol, const std::string& task) {
  check_protocol(protocol);
  if (protocol == "spt") return "lra-spt-v1";
  const SuiteDef* suite = suite_of_task(task);
  return suite ? suite->protocol : "";
}

const EmbeddedFile* find_embedded(std::string_view name) {
  for (const auto& f : embedded_manifests())
    if (name == f.name) return &f;
  return nullptr;
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"official", "smoke"};
  return names;
}

std::string preset_file(const std::string& task, const std::string& preset, const std::string& protocol) {
  // The forgetting curve's official manifest is versioned on its own.
  if (task == kForgettingTask && preset == "official" && protocol == "scratch")
    return std::string(kForgettingDir) + task + std::string(kExt);
  // Each suite's official manifests are versioned on their own (manifest/suites.h).
  if (preset == "official" && protocol == "scratch")
    if (const SuiteDef* suite = suite_of_task(task)) return suite->official_dir + task + std::string(kExt);
  return std::string(preset_dir(preset, protocol)) + task + std::string(kExt);
}

std::vector<std::string> preset_tasks(const std::string& preset, const std::string& protocol) {
  std::string_view dir = preset_dir(preset, protocol);
  if (preset == "official" && protocol == "scratch") {  // every suite's official folder
    std::vector<std::string> tasks;
    for (const auto& suite : suite_defs())
      for (auto& t : suite_tasks(suite)) tasks.push_back(std::move(t));
    std::sort(tasks.begin(), tasks.end());
    return tasks;
  }
  std::vector<std::string> tasks;
  for (const auto& f : embedded_manifests()) {
    std::string_view name = f.name;
    if (name.size() > dir.size() + kExt.size() && name.substr(0, dir.size()) == dir &&
        name.substr(name.size() - kExt.size()) == kExt) {
      std::string_view stem = name.substr(dir.size(), name.size() - dir.size() - kExt.size());
      if (stem.find('/') == std::string_view::npos) tasks.emplace_back(stem);
    }
  }
  std::sort(tasks.begin(), tasks.end());
  return tasks;
}

Manifest load_preset(const std::string& task, const std::string& preset, const std::string& protocol) {
  const std::string file = preset_file(task, preset, protocol);  // throws for an unknown preset
  const EmbeddedFile* f = find_embedded(file);
  if (!f) {
    auto tasks = preset_tasks(preset, protocol);
    const std::string which = protocol == "scratch" ? preset : preset + " " + protocol;
    throw Error(ErrorKind::usage, "no " + which + " manifest for task '" + task + "' (tasks with " +
                                      which + " manifests: " +
                                      (tasks.empty() ? std::string("none") : text::join(tasks)) +
                                      "; or pass --manifest FILE)");
  }
  Manifest m = parse_manifest(f->text, "builtin:" + file);
  if (m.task != task) {
    throw Error(ErrorKind::internal, "builtin:" + file + " declares task = \"" + m.task +
                                         "\", expected \"" + task + "\"");
  }
  return m;
}

Manifest load_manifest_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    throw Error(ErrorKind::usage, "manifest file '" + path + "' does not exist");
  }
  if (fs::is_directory(st)) {
    throw Error(ErrorKind::usage, "manifest path '" + path + "' is a directory; expected a .toml file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::rules,
                "cannot read manifest file '" + path + "': " + std::strerror(errno));
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    throw Error(ErrorKind::rules, "error while reading manifest file '" + path + "'");
  }
  return parse_manifest(text, path);
}

const EmbeddedFile* find_official(const std::string& task) {
  return find_embedded(preset_file(task, "official"));
}

bool is_official_text(const std::string& task, std::string_view text) {
  const EmbeddedFile* f = find_official(task);
  return f && f->text == text;
}

}  // namespace lra::host
