// Builds the command-line interface and dispatches to the commands.
#pragma once

namespace lra::host {
int run_cli(int argc, char** argv);
}
