// `lrahost suite`: one plugin on every task and trial seed (runs/suite.h),
// then its summary on stdout.
#include <cstdio>

#include "cli/commands.h"
#include "device/blas_kernels.h"
#include "manifest/suites.h"
#include "runs/suite.h"

namespace lra::host {

int suite_command(const SuiteArgs& a) {
  load_best_blas_kernels();  // once here, and every run it starts inherits the kernels
  const SuiteOutcome r = run_suite(a);
  std::printf("\n%s\nwritten: %s, %s\n", r.markdown.c_str(), (r.out / "suite.json").c_str(), (r.out / "suite.md").c_str());
  return r.first_failure;
}

void add_suite_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<SuiteArgs>();
  auto* st = app.add_subcommand("suite", "Run a plugin on every task, seed and grid point of a suite (LRA, MQAR, MAD); "
                                         "summarise accuracy (mean +- std, the LRA average; for a grid the best "
                                         "training point per model, chosen on validation), continuing past a failure");
  st->add_option("--plugin", a->plugin, kMixerPluginHelp)->required();
  st->add_option("--out", a->out, "Suite directory (runs/<task>/seed-<S>/, suite.json, suite.md)")->required();
  st->add_option("--suite", a->suite, "lra (default), mqar or mad: the suite's tasks, manifests and summary")
      ->check([](const std::string& s) {
        try {
          find_suite(s);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      });
  st->add_option("--tasks", a->tasks, "Comma-separated tasks of the suite (default: all it has in the preset)");
  st->add_option("--seeds", a->seeds, "Comma-separated trial seeds (default: each manifest's rules.seeds)");
  add_preset_option(st, a->preset, "official (closed division) or smoke");
  add_protocol_option(st, a->protocol);
  st->add_option("--reference", a->reference,
                 "Run every task under a reference configuration (table1: LRA's Table 1 settings of a built-in "
                 "mixer, docs/mixers.md); passed to every run, which is open and labelled");
  st->add_option("--set", a->sets, "KEY=VALUE passed to every run");
  st->add_option("--data-dir", a->data_dir, "Data root for every run");
  add_device_option(st, a->device);
  add_threads_option(st, a->threads);
  st->add_option("--micro-batch", a->micro_batch, "Examples per forward pass (see run)")->check(CLI::NonNegativeNumber);
  add_fp32_flag(st, a->fp32);
  st->add_option("--sign-key", a->sign_key, "Ed25519 private key (PEM): sign every run's result.json");
  st->add_flag("--retry-failed", a->retry_failed,
               "In a finished suite directory: run again every planned run without a result (the failed ones, and "
               "tasks or seeds added to the command), keep the others, and write the summary anew");
  on_parsed(st, slot, a, [](SuiteArgs& args) { return suite_command(args); });
}

}  // namespace lra::host
