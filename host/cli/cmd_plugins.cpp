// `lrahost inspect` and `lrahost plugins`.
#include <cstdio>

#include "cli/commands.h"
#include "common/text.h"
#include "lra/status.h"
#include "plugins/loader.h"
#include "plugins/python_mixer.h"

namespace lra::host {
namespace {

void print_options(const std::vector<lra::OptionSpec>& specs, const char* title) {
  std::printf("%s\n", title);
  if (specs.empty()) std::printf("  (none)\n");
  for (const auto& s : specs)
    std::printf("  %-22s %-6s default %-10s %s\n", s.name.c_str(), type_name(s.default_value),
                to_string(s.default_value).c_str(), s.help.c_str());
}

// A Python mixer (FILE.py:CLASS): opened through the built-in Python plugin,
// which checks the class against the contract; its identity is its sources.
int inspect_python_mixer(const std::string& spec) {
  const LoadedPlugin& lp = open_plugin(spec, LRA_KIND_MIXER);
  const Descriptor& d = lp.descriptor;
  std::printf("file          %s\n", d.file.c_str());
  std::printf("name          %s %s (mixer plugin, Python)\n", text::visible_text(d.name).c_str(),
              text::visible_text(d.version).c_str());
  std::printf("description   %s\n", text::visible_text(d.description).c_str());
  std::printf("interpreter   Python %s, torch %s\n", lp.source.value("python", "?").c_str(),
              lp.source.value("torch", "?").c_str());
  std::string caps;
  for (const auto& c : capability_names(d.capabilities)) caps += (caps.empty() ? "" : ", ") + c;
  std::printf("capabilities  %s\n", caps.empty() ? "none" : caps.c_str());
  std::printf("status        compatible\n");
  std::printf("sha256        %s (of its sources)\n", lp.sha256.c_str());
  for (const auto& [path, sha] : lp.source.at("files").items())
    std::printf("  %-22s %s\n", text::visible_text(path).c_str(), sha.get<std::string>().c_str());
  std::vector<lra::OptionSpec> specs;
  Status st = lp.mixer().options(&specs);
  if (!st.ok()) throw Error(ErrorKind::plugin, "plugin '" + d.name + "' failed to list its options: " + st.message);
  print_options(specs, "options (set with --set mixer.NAME=VALUE)");
  return 0;
}

}  // namespace

int inspect_command(const std::string& target) {
  if (is_python_mixer_spec(target)) return inspect_python_mixer(target);
  // A NAME is looked up among discovered plugins of either kind.
  std::filesystem::path file = target;
  const bool looks_like_path = target.find('/') != std::string::npos || file.extension() == ".so";
  if (!looks_like_path) {
    bool found = false;
    for (const auto& p : discover_plugins())
      if (p.error.empty() && p.descriptor.name == target) {
        file = p.file;
        found = true;
        break;
      }
    if (!found) file = resolve_plugin(target, LRA_KIND_MIXER);  // throws with the list of names
  }
  const Descriptor d = read_descriptor(file);
  const Descriptor& h = host_descriptor();
  std::printf("file          %s\n", file.c_str());
  // Shown, not obeyed: a descriptor's strings may hold control or bidi characters (it is refused below then).
  std::printf("name          %s %s (%s plugin)\n", text::visible_text(d.name).c_str(),
              text::visible_text(d.version).c_str(), kind_name(d.kind));
  std::printf("description   %s\n", text::visible_text(d.description).c_str());
  std::printf("SDK ABI       %u.%u (host %u.%u)\n", d.abi_major, d.abi_minor, h.abi_major, h.abi_minor);
  std::printf("LibTorch      %s (host %s)\n", d.torch_version.c_str(), h.torch_version.c_str());
  std::printf("C++ ABI       _GLIBCXX_USE_CXX11_ABI=%d (host %d), %s (host %s)\n", d.cxx11_abi, h.cxx11_abi,
              d.stdlib.c_str(), h.stdlib.c_str());
  std::printf("compiler      %s\n", text::visible_text(d.compiler).c_str());
  std::string caps;
  for (const auto& c : capability_names(d.capabilities)) caps += (caps.empty() ? "" : ", ") + c;
  if (d.kind == LRA_KIND_MIXER) std::printf("capabilities  %s\n", caps.empty() ? "none" : caps.c_str());
  auto problems = compatibility_problems(d, h, 0);
  if (!problems.empty()) {
    std::printf("status        REJECTED\n");
    for (const auto& p : problems) std::printf("  - %s\n", p.c_str());
    return static_cast<int>(ErrorKind::plugin);
  }
  std::printf("status        compatible\n");
  const LoadedPlugin& lp = load_plugin(file, d.kind);
  std::printf("sha256        %s\n", lp.sha256.c_str());
  std::vector<lra::OptionSpec> specs;
  Status st = d.kind == LRA_KIND_MIXER ? lp.mixer().options(&specs) : lp.task().data_options(&specs);
  if (!st.ok()) throw Error(ErrorKind::plugin, "plugin '" + d.name + "' failed to list its options: " + st.message);
  print_options(specs, d.kind == LRA_KIND_MIXER ? "options (set with --set mixer.NAME=VALUE)" : "data options ([data] keys)");
  return 0;
}

int plugins_command() {
  auto found = discover_plugins();
  std::printf("search path:");
  for (const auto& d : plugin_search_dirs()) std::printf(" %s", d.c_str());
  std::printf("\n");
  if (found.empty()) std::printf("no plugins found\n");
  for (const auto& p : found) {
    if (!p.error.empty()) {
      std::printf("  %-6s %-20s %-8s %-10s %s\n", "?", p.file.filename().c_str(), "", "REJECTED", p.error.c_str());
      continue;
    }
    std::string caps;
    for (const auto& c : capability_names(p.descriptor.capabilities)) caps += (caps.empty() ? "" : ",") + c;
    std::printf("  %-6s %-20s %-8s %-10s %s%s%s\n", kind_name(p.descriptor.kind),
                text::visible_text(p.descriptor.name).c_str(), text::visible_text(p.descriptor.version).c_str(), p.problems.empty() ? "ok" : "REJECTED", p.file.c_str(),
                caps.empty() ? "" : "  [", caps.empty() ? "" : (caps + "]").c_str());
    for (const auto& pr : p.problems) std::printf("         - %s\n", pr.c_str());
  }
  return 0;
}

void add_plugins_command(CLI::App& app, CommandSlot& slot) {
  auto* pl = app.add_subcommand("plugins", "List discovered plugins with kinds, versions and status");
  pl->callback([&slot] { slot.action = [] { return plugins_command(); }; });
}

}  // namespace lra::host
