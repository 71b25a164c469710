// `lrahost inspect --check PLUGIN`: the conformance checks (cli/conformance.h)
// on a small model shape, each with its verdict, measured difference and time.
#include <cstdio>
#include <map>

#include "cli/conformance.h"
#include "cli/mixer_options.h"
#include "cli/run_support.h"
#include "lra/status.h"
#include "model/backbone.h"
#include "plugins/loader.h"

namespace lra::host {

int inspect_check_command(const std::string& target, const InspectCheckArgs& a) {
  const LoadedPlugin& mixer = open_plugin(target, LRA_KIND_MIXER);
  std::map<std::string, std::string> given;
  for (const auto& s : a.sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || s.rfind("mixer.", 0) != 0)
      throw Error(ErrorKind::usage, "inspect --check --set takes mixer.NAME=VALUE, got '" + s + "'");
    given[s.substr(6, eq - 6)] = s.substr(eq + 1);
  }
  const lra::Params options = resolve_mixer_options(mixer, given);
  if (a.length < 2 || a.d_model < 1 || a.heads < 1 || a.d_model % a.heads != 0 || a.layers < 1)
    throw Error(ErrorKind::usage, "inspect --check: --length must be >= 2, --d-model a multiple of --heads, "
                                  "--layers >= 1");
  ModelConfig m;
  m.d_model = a.d_model;
  m.heads = a.heads;
  m.qkv_dim = a.d_model;
  m.layers = a.layers;
  std::vector<lra::MixerSpec> specs;
  for (int64_t i = 0; i < a.layers; ++i) specs.push_back(mixer_spec(m, a.length, i, 0));
  const auto checks = check_conformance(mixer.descriptor.capabilities, plugin_mixer_factory(mixer, options), specs,
                                        {2, 0, false, 10000.0, "cpu"});
  std::printf("conformance   %lld layers, input [2, %lld, %lld], %lld heads, CPU\n", static_cast<long long>(a.layers),
              static_cast<long long>(a.length), static_cast<long long>(a.d_model), static_cast<long long>(a.heads));
  for (const auto& c : checks) {
    std::printf("  %-16s %-7s", c.name.c_str(), c.status.c_str());
    if (c.status != "skipped") std::printf(" %8.3f s", c.seconds);
    if (c.status == "passed" && c.tolerance > 0) std::printf("  max difference %.3g (tolerance %.3g)", c.difference, c.tolerance);
    if (c.status == "skipped" && !c.detail.empty()) std::printf(" %s", c.detail.c_str());
    std::printf("\n");
  }
  const std::string summary = enforce_conformance(mixer.descriptor.name, checks);  // throws on a failure (exit 3)
  std::printf("%s\n", summary.c_str());
  return 0;
}

}  // namespace lra::host
