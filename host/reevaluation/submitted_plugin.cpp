#include "reevaluation/submitted_plugin.h"

#include <regex>

#include "lra/status.h"
#include "isolation/readable_copy.h"
#include "plugins/loader.h"
#include "reevaluation/bundle_source.h"

namespace lra::host {
namespace fs = std::filesystem;


std::string SubmittedPlugin::sha256() const { return python ? python->sha256 : so.stem().string(); }

std::string SubmittedPlugin::shown() const { return python ? python->spec() : so.filename().string(); }

std::optional<SubmittedPlugin> submitted_plugin(const fs::path& dir, const std::string& plugin) {
  static const std::regex so_name(R"(plugins/[0-9a-f]{64}\.so)");
  std::error_code ec;
  SubmittedPlugin p;
  if (std::regex_match(plugin, so_name)) {
    p.so = fs::absolute(dir / plugin);
    if (!fs::is_regular_file(p.so, ec)) return std::nullopt;
    const fs::path source = fs::absolute(dir / bundle_source_folder(p.so.stem().string()));
    if (fs::is_regular_file(source / "CMakeLists.txt", ec)) p.source_folder = source;
    return p;
  }
  p.python = parse_bundle_python_plugin(plugin);
  if (!p.python) return std::nullopt;
  p.python_folder = fs::absolute(dir / p.python->folder());
  if (!fs::is_regular_file(p.python_folder / p.python->file, ec)) return std::nullopt;
  return p;
}

StagedPlugin stage_plugin(const SubmittedPlugin& p, const fs::path& into) {
  StagedPlugin s;
  if (!p.python) {
    s.staged = into / p.so.filename();
    copy_readable(p.so, s.staged);
    s.spec = s.staged.string();
    return s;
  }
  // The folder as extracted: exactly the recorded sources (bundle.cpp checked
  // them), regular files and folders only.
  s.staged = into / p.python->sha256;
  copy_readable_tree(p.python_folder, s.staged);
  s.spec = (s.staged / p.python->file).string() + ":" + p.python->cls;
  // mixer-server opens FILE.py:CLASS through this library (plugins/python_mixer.cpp).
  const fs::path bridge = builtin_plugin_dir() / "lra_mixer_python.so";
  std::error_code ec;
  if (!fs::is_regular_file(bridge, ec))
    throw Error(ErrorKind::plugin, "this lrahost has no Python plugin (" + bridge.string() +
                                       " is missing), so it cannot re-evaluate a Python mixer; build it with "
                                       "python3-dev, pybind11-dev and python3-torch installed (scripts/bootstrap)");
  s.extra.push_back(fs::canonical(bridge));
  return s;
}

}  // namespace lra::host
