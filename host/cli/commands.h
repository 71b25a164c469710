// cli/commands.h — the lrahost subcommands (docs/cli.md). Each cmd_*.cpp
// declares its subcommand's options (add_*_command, bound into a CommandSlot;
// cli/command_options.h) and runs it (*_command: the process exit code;
// errors are thrown as lra::Error and mapped to codes by main()).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/bench_run.h"
#include "cli/command_options.h"
#include "forgetting/forget_run.h"
#include "runs/span_run.h"
#include "runs/suite.h"
#include "runs/sweep.h"
#include "runs/train_run.h"
#include "plugins/conformance.h"

namespace lra::host {

// Every subcommand, in the order `lrahost --help` lists them.
void add_run_command(CLI::App& app, CommandSlot& slot);
void add_data_command(CLI::App& app, CommandSlot& slot);
void add_forget_command(CLI::App& app, CommandSlot& slot);
void add_bench_command(CLI::App& app, CommandSlot& slot);
void add_sweep_command(CLI::App& app, CommandSlot& slot);
void add_suite_command(CLI::App& app, CommandSlot& slot);
void add_span_command(CLI::App& app, CommandSlot& slot);
void add_leaderboard_command(CLI::App& app, CommandSlot& slot);
void add_inspect_command(CLI::App& app, CommandSlot& slot);
void add_plugins_command(CLI::App& app, CommandSlot& slot);
void add_verify_command(CLI::App& app, CommandSlot& slot);
void add_keygen_command(CLI::App& app, CommandSlot& slot);
void add_curves_command(CLI::App& app, CommandSlot& slot);
void add_recall_command(CLI::App& app, CommandSlot& slot);
void add_sign_command(CLI::App& app, CommandSlot& slot);
void add_submit_command(CLI::App& app, CommandSlot& slot);
void add_mixer_server_command(CLI::App& app, CommandSlot& slot);

int run_command(const RunArgs& args);

struct GenerateArgs {
  std::string generator, out;
  std::vector<std::string> sets;  // --set KEY=VALUE: the task's [data] keys
  std::optional<int64_t> n;
  uint64_t seed = 0;
  int threads = 0;
};
int data_generate_command(const GenerateArgs& args);

struct CheckArgs {
  std::string task, data_dir;
  std::vector<std::string> sets;  // KEY=VALUE of the task's [data] (a generated task's other data)
  int threads = 0;
};
int data_check_command(const CheckArgs& args);

int forget_command(const ForgetArgs& args);

int bench_command(const BenchArgs& args);

int sweep_command(const SweepArgs& args);

int suite_command(const SuiteArgs& args);

int span_command(const SpanArgs& args);

struct LeaderboardArgs {
  std::vector<std::string> results;     // result.json files or directories
  std::vector<std::string> bench;       // bench.json files: the speed/accuracy/memory chart
  std::vector<std::string> baselines;   // result files or directories: the open division's reference rows
  std::string out;
  std::string title = "lrahost leaderboard";
  std::optional<std::string> trusted_verifiers;  // PEM public keys whose reevaluation.json signatures count
};
int leaderboard_command(const LeaderboardArgs& args);

int inspect_command(const std::string& plugin);
// `lrahost inspect --check PLUGIN` (cmd_inspect_check.cpp): the conformance
// checks (plugins/conformance.h) at this shape.
struct InspectCheckArgs {
  int64_t length = 64, d_model = 64, heads = 4, layers = 2;
  std::vector<std::string> sets;  // mixer.NAME=VALUE
  std::string device = "cpu";     // where the checks run (auto, cpu, cuda)
  bool gradients = false;         // also the gradient checks (plugins/gradient_check.h), on the CPU in float64
};
int inspect_check_command(const std::string& plugin, const InspectCheckArgs& args);
struct InspectArgs {
  std::string plugin;
  bool check = false;         // also run the conformance checks
  InspectCheckArgs checks;
};

int plugins_command();
// trusted_keys: a folder of Ed25519 public keys; then every result must be signed by one of them.
int verify_command(const std::vector<std::string>& paths, const std::optional<std::string>& trusted_keys,
                   bool as_submission);
int keygen_command(const std::string& out);

struct SubmitArgs {
  std::vector<std::string> runs;        // run directories (or folders holding them), or result.json files
  std::string out;                      // the bundle file to write
  std::vector<std::string> sources;     // --source [NAME=]DIR: a compiled mixer's source folder
};
int submit_command(const SubmitArgs& args);

// verify --reevaluate BUNDLE (reevaluation/reevaluate.h).
struct ReevaluateArgs {
  std::optional<std::string> bundle, out, data_dir;
  std::optional<uint64_t> private_seed;
  int64_t private_examples = 0;
  std::string device = "cpu";
  int threads = 0;
  double memory_gib = 32;
  int timeout_s = 3600;          // one run's mixer process
  int call_timeout_s = 600;      // one request to it
  int64_t bundle_timeout_s = 6 * 3600;
  int build_timeout_s = 1800;    // one bundled source's build
  std::optional<std::string> sdk;
  bool no_sandbox = false;
  std::optional<std::string> trusted_keys;
  std::optional<std::string> sign_key;  // the maintainer's Ed25519 key: signs each reevaluation.json
  bool sign_as_author = false;          // sign with the user's own author key (common/key_pair.h), made on first use
};
int reevaluate_command(const ReevaluateArgs& args);

// verify: result files, or --reevaluate BUNDLE.
struct VerifyArgs {
  std::vector<std::string> paths;
  std::optional<std::string> trusted_keys;
  bool submission = false;  // the files as one leaderboard submission decide the exit code too
  ReevaluateArgs reevaluate;
};

// The confined half of verify --reevaluate (internal): isolation/mixer_server.h.
struct MixerServerArgs {
  std::string plugin, device = "cpu";
  int threads = 1;
};
int mixer_server_command(const MixerServerArgs& args);

}  // namespace lra::host
