#include "cli/app.h"

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/build_info.h"
#include "lra/status.h"

namespace lra::host {

int run_cli(int argc, char** argv) {
  CLI::App app{"lrahost — trains and evaluates long-range sequence models under the fixed LRA rules"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "lrahost " + build_info().version + " (" + build_info().git_revision + ")");
  CommandSlot slot;
  slot.command_line.assign(argv, argv + argc);
  for (auto add : {add_run_command, add_data_command, add_forget_command, add_bench_command, add_sweep_command,
                   add_suite_command, add_curves_command, add_recall_command, add_span_command, add_leaderboard_command, add_inspect_command,
                   add_plugins_command, add_verify_command, add_keygen_command, add_sign_command, add_submit_command,
                   add_mixer_server_command})
    add(app, slot);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the parse error
    return code == 0 ? 0 : static_cast<int>(ErrorKind::usage);
  }
  return slot.action ? slot.action() : static_cast<int>(ErrorKind::usage);
}

}  // namespace lra::host
