#include "cli/app.h"

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/conformance.h"
#include "common/build_info.h"
#include "lra/status.h"

namespace lra::host {

namespace {

// Seeds are 0..2^63-1 wherever they are read: "-7" or "99999999999999999999"
// is a usage error, never wrapped or clamped (parse_seed_list does the same
// for --seeds lists).
const CLI::Validator kSeed(
    [](std::string& s) -> std::string {
      const bool digits = !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos;
      if (digits && (s.size() < 19 || s <= "9223372036854775807")) return {};
      return "a seed is an integer in 0..9223372036854775807 (2^63-1), got '" + s + "'";
    },
    "SEED", "seed");

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"lrahost — trains and evaluates long-range sequence models under the fixed LRA rules"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "lrahost " + build_info().version + " (" + build_info().git_revision + ")");

  RunArgs run;
  auto* r = app.add_subcommand("run", "Train and evaluate a mixer plugin on a task under its manifest");
  r->add_option("--plugin", run.plugin, "Mixer plugin: built-in NAME or PATH to a .so")->required();
  r->add_option("--task", run.task, "Task: listops, text, retrieval, image, pathfinder, pathx")->required();
  r->add_option("--preset", run.preset, "official (closed division) or smoke (open, CPU-sized)")
      ->check(CLI::IsMember({"official", "smoke"}));
  r->add_option("--manifest", run.manifest, "Use this manifest file instead of the preset (open unless identical)");
  r->add_option("--set", run.sets,
                "KEY=VALUE override, e.g. train.steps=100 (makes the run open) or mixer.OPTION=VALUE "
                "(the plugin's own option; stays closed)");
  r->add_option("--seed", run.seed, "Trial seed (recorded; default: the manifest's train.seed)")->check(kSeed);
  r->add_option("--data-dir", run.data_dir, "Data root (default $LRA_DATA_DIR or ~/.cache/lrahost/data)");
  r->add_option("--out", run.out, "Run directory (default runs/<task>-<plugin>-<time>)");
  r->add_option("--device", run.device, "auto, cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  r->add_option("--threads", run.threads, "CPU threads (0 = all cores)");
  r->add_option("--micro-batch", run.micro_batch,
                "Examples per forward pass; gradients are accumulated to the manifest's batch (saves memory, "
                "same update)")->check(CLI::NonNegativeNumber);
  r->add_flag("--resume", run.resume, "Continue the run in --out from its newest complete checkpoint (same manifest, "
                                      "plugin, options and seed)");
  r->add_option("--sign-key", run.sign_key, "Ed25519 private key (PEM, from `lrahost keygen`): sign result.json");
  r->add_flag("--fp32", run.fp32, "On CUDA, float32 instead of bfloat16 autocast (the manifest's train.precision "
                                  "may also forbid autocast)");

  auto* data = app.add_subcommand("data", "Generate or check datasets");
  data->require_subcommand(1);
  GenerateArgs gen;
  auto* g = data->add_subcommand("generate", "Generate a synthetic dataset (deterministic per seed)");
  g->add_option("generator", gen.generator, "listops, pathfinder or pathx (any task plugin with a generator)")
      ->required();
  g->add_option("--out", gen.out, "Output directory")->required();
  g->add_option("--n", gen.n, "Total number of examples (default: the task's LRA size)");
  g->add_option("--seed", gen.seed, "Generator seed")->check(kSeed);
  g->add_option("--threads", gen.threads, "Threads (0 = all cores)");
  std::string check_task, check_dir;
  int check_threads = 0;
  auto* c = data->add_subcommand("check", "Validate a dataset; print counts per split and a fingerprint");
  c->add_option("--task", check_task, "Task name")->required();
  c->add_option("--data-dir", check_dir, "Directory holding the dataset")->required();
  c->add_option("--threads", check_threads, "Threads (0 = all cores)");

  ForgetArgs fg;
  auto* f = app.add_subcommand("forget", "Forgetting curve: train a causal LM around a mixer (or load a TorchScript "
                                         "LM) and measure how far back it copies its context");
  f->add_option("--plugin", fg.plugin, "Mixer plugin (NAME or PATH) to train in the manifest's causal LM");
  f->add_option("--torchscript", fg.torchscript, "A causal LM saved as TorchScript: forward(ids [1,T]) -> logits [1,T,V]");
  f->add_option("--compare", fg.compare, "forgetting.json files or the reference tool's result files (JSON lists) to "
                                         "overlay in one plot (compare.svg), with their memory lengths");
  f->add_option("--out", fg.out, "Output directory")->required();
  f->add_option("--preset", fg.preset, "official (forgetting-v1) or smoke (CPU-sized)")
      ->check(CLI::IsMember({"official", "smoke"}));
  f->add_option("--manifest", fg.manifest, "A forgetting manifest file instead of the preset (open division)");
  f->add_option("--set", fg.sets, "KEY=VALUE manifest override (open division) or mixer.OPTION=VALUE");
  f->add_option("--corpus", fg.corpus, "Text FILE or DIR of .txt files (default: the Brown corpus)");
  f->add_option("--ids", fg.ids_file, "--torchscript only: evaluation text as raw little-endian int32 token ids");
  f->add_option("--bos", fg.bos, "--torchscript only: the separator id ([bos] S [bos] S [eos])");
  f->add_option("--eos", fg.eos, "--torchscript only: the end id");
  f->add_option("--train-len", fg.train_len, "--torchscript only: the model's training length (reference lines)");
  f->add_option("--max-len", fg.max_len, "Longest tested length L (default: the manifest's data.test_max_length)");
  f->add_option("--granularity", fg.granularity, "Number of tested lengths (default: the manifest's)");
  f->add_option("--granularity-type", fg.granularity_type, "linear or log spacing of the lengths")
      ->check(CLI::IsMember({"linear", "log"}));
  f->add_option("--repeats", fg.repeats, "Samples per length (default: the manifest's)");
  f->add_option("--seed", fg.seed, "Sampling seed (default: the manifest's data.sample_seed)")->check(kSeed);
  f->add_option("--batch-tokens", fg.batch_tokens, "Tokens per forward pass while measuring (default 65536)")
      ->check(CLI::NonNegativeNumber);
  f->add_option("--title", fg.title, "--compare only: plot title");
  f->add_flag("--log-x", fg.log_x, "Logarithmic length axis in the plots");
  f->add_flag("--fp32", fg.fp32, "On CUDA, train and measure in float32 instead of bfloat16 autocast");
  f->add_option("--device", fg.device, "auto, cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  f->add_option("--threads", fg.threads, "CPU threads (0 = all cores)");

  BenchArgs bn;
  auto* b = app.add_subcommand("bench", "Training speed and peak memory per plugin and length (the LRA paper's "
                                        "Table 2 protocol, Text backbone)");
  b->add_option("--plugins", bn.plugins, "Comma-separated mixer plugins (names or paths), or all");
  b->add_option("--lengths", bn.lengths, "Comma-separated sequence lengths");
  b->add_option("--batch", bn.batch, "Examples per step (LRA: 32)");
  b->add_option("--warmup", bn.warmup, "Untimed steps first (allocator, kernels, caches)");
  b->add_option("--steps", bn.steps, "Steps per timed repetition");
  b->add_option("--repeats", bn.repeats, "Timed repetitions (the median is reported)");
  b->add_option("--accuracy", bn.accuracy, "result.json files: mean test accuracy per plugin for the speed/accuracy chart");
  b->add_option("--report", bn.report, "Merge these bench.json files into one bench.json/md/svg; measure nothing");
  b->add_option("--out", bn.out, "Output directory (bench.json, bench.md, bench.svg)");
  b->add_option("--device", bn.device, "auto, cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  b->add_flag("--fp32", bn.fp32, "On CUDA, float32 instead of bfloat16 autocast");
  b->add_option("--threads", bn.threads, "CPU threads (0 = all cores)");

  SweepArgs sw;
  auto* sp = app.add_subcommand("sweep", "Plan every plugin x task x seed as one Slurm job array (or run them here), "
                                         "and collect the results");
  sp->add_option("--plugins", sw.plugins, "Comma-separated mixer plugins");
  sp->add_option("--tasks", sw.tasks, "Comma-separated tasks");
  sp->add_option("--seeds", sw.seeds, "Comma-separated trial seeds");
  sp->add_option("--out", sw.out, "Sweep directory (sweep.json, sweep.sbatch, runs/, logs/)");
  sp->add_option("--preset", sw.preset, "official or smoke")->check(CLI::IsMember({"official", "smoke"}));
  sp->add_option("--set", sw.sets, "KEY=VALUE passed to every run");
  sp->add_option("--data-dir", sw.data_dir, "Data root for every run");
  sp->add_flag("--slurm", sw.slurm, "Write a Slurm job array (sweep.sbatch) instead of running here");
  sp->add_flag("--submit", sw.submit, "With --slurm: submit it with sbatch");
  sp->add_option("--partition", sw.partition, "Slurm partition");
  sp->add_option("--time", sw.time, "Slurm time limit per run, e.g. 04:00:00");
  sp->add_option("--gpus", sw.gpus, "GPUs per run (--gres=gpu:N)");
  sp->add_option("--cpus", sw.cpus, "CPUs per run");
  sp->add_option("--mem", sw.mem, "Memory per run, e.g. 32G");
  sp->add_option("--max-parallel", sw.max_parallel, "At most this many array tasks at once (0 = no limit)");
  sp->add_option("--job-name", sw.job_name, "Slurm job name");
  sp->add_option("--collect", sw.collect, "Gather the results of the sweep in DIR into leaderboard.md/json");
  sp->add_option("--run-index", sw.run_index, "Run entry I of the plan in DIR (what each array task does)");
  sp->add_option("dir", sw.run_dir, "The sweep directory, with --run-index");
  sp->add_option("--threads", sw.threads, "CPU threads for --run-index (0 = all cores)");

  SuiteArgs su;
  auto* st = app.add_subcommand("suite", "Run a plugin on every LRA task and seed; summarise accuracy (mean +- std) "
                                         "and the LRA average, continuing past a failing task");
  st->add_option("--plugin", su.plugin, "Mixer plugin: built-in NAME or PATH to a .so")->required();
  st->add_option("--out", su.out, "Suite directory (runs/<task>/seed-<S>/, suite.json, suite.md)")->required();
  st->add_option("--tasks", su.tasks, "Comma-separated tasks (default: all six)");
  st->add_option("--seeds", su.seeds, "Comma-separated trial seeds (default: each manifest's rules.seeds)");
  st->add_option("--preset", su.preset, "official (closed division) or smoke")->check(CLI::IsMember({"official", "smoke"}));
  st->add_option("--set", su.sets, "KEY=VALUE passed to every run");
  st->add_option("--data-dir", su.data_dir, "Data root for every run");
  st->add_option("--device", su.device, "auto, cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  st->add_option("--threads", su.threads, "CPU threads (0 = all cores)");
  st->add_option("--micro-batch", su.micro_batch, "Examples per forward pass (see run)")->check(CLI::NonNegativeNumber);
  st->add_flag("--fp32", su.fp32, "On CUDA, float32 instead of bfloat16 autocast");
  st->add_option("--sign-key", su.sign_key, "Ed25519 private key (PEM): sign every run's result.json");

  SpanArgs sn;
  auto* sa = app.add_subcommand("span", "Required attention span (LRA paper section 2.3) of a trained run, per layer "
                                        "and head");
  sa->add_option("--run", sn.run, "Run directory written by lrahost run (result.json, model.pt)")->required();
  sa->add_option("--samples", sn.samples, "Validation examples, drawn at random")->check(CLI::PositiveNumber);
  sa->add_option("--seed", sn.seed, "Seed of the random draw (recorded)")->check(kSeed);
  sa->add_option("--batch", sn.batch, "Examples per forward pass")->check(CLI::PositiveNumber);
  sa->add_option("--out", sn.out, "Output JSON file (default: <run>/span.json)");
  sa->add_option("--data-dir", sn.data_dir, "Data root (default: as for run)");
  sa->add_option("--device", sn.device, "auto, cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  sa->add_option("--threads", sn.threads, "CPU threads (0 = all cores)");

  LeaderboardArgs lb;
  auto* lbc = app.add_subcommand("leaderboard", "Build the leaderboard site (index.html, leaderboard.md, "
                                                "leaderboard.json) from result files");
  lbc->add_option("results", lb.results, "result.json files or directories")->required();
  lbc->add_option("--out", lb.out, "Output directory")->required();
  lbc->add_option("--bench", lb.bench, "bench.json files: adds the speed/accuracy/memory chart");
  lbc->add_option("--title", lb.title, "Page title");

  std::string inspect_target;
  auto* in = app.add_subcommand("inspect", "Show a plugin's descriptor, build facts, compatibility and options");
  in->add_option("plugin", inspect_target, "PATH to a .so or a plugin NAME")->required();
  bool inspect_check = false;
  InspectCheckArgs ic;
  in->add_flag("--check", inspect_check,
               "Also run the conformance checks (shape, finite, deterministic, padding_mask, causal, "
               "attention_probs) on small random inputs; a failed check is exit 3");
  in->add_option("--length", ic.length, "--check: sequence length")->capture_default_str();
  in->add_option("--d-model", ic.d_model, "--check: model width (also the q/k/v width)")->capture_default_str();
  in->add_option("--heads", ic.heads, "--check: heads")->capture_default_str();
  in->add_option("--layers", ic.layers, "--check: layers (one mixer each)")->capture_default_str();
  in->add_option("--set", ic.sets, "--check: mixer.NAME=VALUE, the plugin's own options");

  auto* pl = app.add_subcommand("plugins", "List discovered plugins with kinds, versions and status");

  std::vector<std::string> verify_paths;
  auto* v = app.add_subcommand("verify", "Check result files: closed/open, valid/invalid, with reasons");
  v->add_option("results", verify_paths, "result.json files or directories");
  std::optional<std::string> trusted_keys;
  v->add_option("--trusted-keys", trusted_keys, "Folder of Ed25519 public keys (*.pem): every result must be signed "
                                                "by one of them");
  std::string keygen_out;
  auto* kg = app.add_subcommand("keygen", "Make an Ed25519 key pair for signing results (lrahost-key.pem, "
                                          "lrahost-key.pub.pem)");
  kg->add_option("--out", keygen_out, "Folder for the two key files")->required();
  ReevaluateArgs re;
  v->add_option("--reevaluate", re.bundle, "A bundle from `lrahost submit`: re-evaluate every run from its weights "
                                           "(plugin code runs in a bubblewrap sandbox)");
  v->add_option("--out", re.out, "--reevaluate: folder to unpack the bundle into and keep, with a reevaluation.json "
                                 "beside each result (default: a temporary folder, removed)");
  v->add_option("--data-dir", re.data_dir, "--reevaluate: data root (default: as for run)");
  v->add_option("--device", re.device, "--reevaluate: cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  v->add_option("--threads", re.threads, "--reevaluate: CPU threads (0 = all cores)");
  v->add_option("--private-seed", re.private_seed,
                "--reevaluate: seed of the private test set (default: drawn at random and never written)");
  v->add_option("--private-examples", re.private_examples,
                "--reevaluate: size of the private test set (default: that of the public test split)")
      ->check(CLI::NonNegativeNumber);
  v->add_option("--sandbox-memory", re.memory_gib, "--reevaluate: address-space limit of the sandbox, GiB")
      ->capture_default_str()->check(CLI::PositiveNumber);
  v->add_option("--sandbox-timeout", re.timeout_s, "--reevaluate: time limit per run, seconds")
      ->capture_default_str()->check(CLI::PositiveNumber);
  v->add_flag("--no-sandbox", re.no_sandbox, "--reevaluate: run submitted plugin code unconfined (unsafe)");

  SubmitArgs sb;
  auto* sbc = app.add_subcommand("submit", "Pack runs (result.json, model.pt) and their plugin into one bundle for "
                                           "a leaderboard maintainer");
  sbc->add_option("runs", sb.runs, "Run directories, folders holding them, or result.json files")->required();
  sbc->add_option("--out", sb.out, "The bundle file to write (a tar)")->required();

  EvaluateRunArgs ev;
  auto* evc = app.add_subcommand("evaluate-run", "Internal: the sandboxed half of verify --reevaluate");
  evc->group("");  // not listed in --help
  evc->add_option("--run", ev.run)->required();
  evc->add_option("--plugin", ev.plugin)->required();
  evc->add_option("--task-info", ev.task_info)->required();
  evc->add_option("--inputs", ev.inputs)->required();
  evc->add_option("--out", ev.out)->required();
  evc->add_option("--device", ev.device);
  evc->add_option("--threads", ev.threads);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the parse error
    return code == 0 ? 0 : static_cast<int>(ErrorKind::usage);
  }

  if (*r) {
    run.command_line.assign(argv, argv + argc);
    return run_command(run);
  }
  if (*f) {
    fg.command_line.assign(argv, argv + argc);
    return forget_command(fg);
  }
  if (*b) return bench_command(bn);
  if (*sp) return sweep_command(sw);
  if (*st) return suite_command(su);
  if (*sa) return span_command(sn);
  if (*lbc) return leaderboard_command(lb);
  if (*g) return data_generate_command(gen);
  if (*c) return data_check_command(check_task, check_dir, check_threads);
  if (*in) {
    const int rc = inspect_command(inspect_target);
    return rc != 0 || !inspect_check ? rc : inspect_check_command(inspect_target, ic);
  }
  if (*pl) return plugins_command();
  if (*sbc) return submit_command(sb);
  if (*evc) return evaluate_run_command(ev);
  if (*v && re.bundle) {
    if (!verify_paths.empty())
      throw Error(ErrorKind::usage, "verify --reevaluate takes the bundle only; verify result files in a separate call");
    re.trusted_keys = trusted_keys;
    return reevaluate_command(re);
  }
  if (*v && verify_paths.empty())
    throw Error(ErrorKind::usage, "verify needs result.json files or folders, or --reevaluate BUNDLE");
  if (*kg) return keygen_command(keygen_out);
  if (*v) return verify_command(verify_paths, trusted_keys);
  return static_cast<int>(ErrorKind::usage);
}

}  // namespace lra::host
