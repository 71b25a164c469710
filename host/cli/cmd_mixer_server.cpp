// `lrahost mixer-server` (internal, not listed in --help): the confined half
// of `verify --reevaluate`, started by the verifier inside the sandbox with
// its channel at descriptor 3 (isolation/mixer_server.h).
#include "cli/commands.h"
#include "device/blas_kernels.h"
#include "isolation/mixer_server.h"
#include "isolation/sandbox.h"

namespace lra::host {

int mixer_server_command(const MixerServerArgs& a) {
  load_best_blas_kernels();  // unless its parent passed OPENBLAS_CORETYPE on
  return serve_mixer(kSandboxChannelFd, MixerServerOptions{a.plugin, a.device, a.threads});
}

void add_mixer_server_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<MixerServerArgs>();
  auto* c = app.add_subcommand("mixer-server", "Internal: the confined half of verify --reevaluate");
  c->group("");  // not listed in --help
  c->add_option("--plugin", a->plugin)->required();
  c->add_option("--device", a->device);
  c->add_option("--threads", a->threads);
  on_parsed(c, slot, a, [](MixerServerArgs& args) { return mixer_server_command(args); });
}

}  // namespace lra::host
