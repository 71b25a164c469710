// `lrahost forget`: the forgetting curve (docs/forgetting.md); the
// work is forgetting/forget_run.h's, what a person reads on stdout is here.
#include <cmath>
#include <cstdio>

#include "cli/commands.h"
#include "cli/console_log.h"
#include "common/dir_lock.h"
#include "device/blas_kernels.h"
#include "device/device.h"
#include "forgetting/forget_run.h"
#include "forgetting/memory_length.h"
#include "lra/status.h"
#include "runs/official_registry.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

using namespace forgetting;


// Each headline length with its significance (forgetting/memory_length.h).
void print_lengths(const Curve& curve) {
  std::printf("  fine-grained memory length    %s; largest tested length with copy accuracy > 99%%\n",
              describe_length(curve, curve.fine).c_str());
  std::printf("  coarse-grained memory length  %s; largest with copy accuracy > LM accuracy + 1 point\n",
              describe_length(curve, curve.coarse).c_str());
  std::printf("  prefix rule                   fine %s, coarse %s (the condition at every tested length up to it)\n",
              marked_length(curve, curve.fine_prefix).c_str(), marked_length(curve, curve.coarse_prefix).c_str());
}

// The verdicts on a curve whose forgetting.json and forgetting.svg are written.
void print_outcome(const ForgetOutcome& r) {
  const Curve& curve = r.curve;
  std::printf("\n%s: forgetting curve over %zu lengths%s\n", curve.label.c_str(), curve.points.size(),
              curve.complete ? "" : " (INCOMPLETE: some lengths failed, see forgetting.json)");
  print_lengths(curve);
  if (curve.train_length > 0) std::printf("  training length               %lld tokens\n", static_cast<long long>(curve.train_length));
  std::printf("  results                       %s, %s\n", (r.out / "forgetting.json").c_str(), (r.out / "forgetting.svg").c_str());
  if (r.held_out_loss)
    std::printf("  held-out loss                 %.4f nats/byte (%.3f bits/byte) after %lld steps\n", *r.held_out_loss,
                *r.held_out_loss / std::log(2.0), static_cast<long long>(r.steps));
}

int compare_command(const ForgetArgs& a) {
  const ComparedCurves r = compare_curves(a);
  const std::vector<LoadedCurve>& loaded = r.loaded;
  std::printf("memory lengths recomputed from the points: fine/coarse = largest tested length where copy > 99%% / "
              "copy > LM + 1 point (Table 3); prefix = the condition at every tested length up to it; \"> L\" = "
              "still holds at the longest tested length L; n.s. = not significant (p >= 0.05, paired t-test of copy "
              "against LM accuracy at that length)\n");
  std::printf("%-28s %8s %10s %13s %15s %10s  %s\n", "model", "fine", "coarse", "fine (prefix)", "coarse (prefix)",
              "train len", "source");
  for (size_t i = 0; i < loaded.size(); ++i) {
    const Curve& c = loaded[i].curve;
    const std::string train = c.train_length > 0 ? std::to_string(c.train_length) : "-";
    std::printf("%-28s %8s %10s %13s %15s %10s  %s (%s)%s\n", c.label.c_str(), marked_length(c, c.fine).c_str(),
                marked_length(c, c.coarse).c_str(), marked_length(c, c.fine_prefix).c_str(),
                marked_length(c, c.coarse_prefix).c_str(), train.c_str(), a.compare[i].c_str(), loaded[i].format.c_str(),
                c.complete ? "" : "  INCOMPLETE: some lengths failed");
  }
  for (const auto& l : loaded)
    for (const auto& note : l.notes) std::printf("note: %s\n", note.c_str());
  std::printf("plot: %s\n", r.svg.c_str());
  return 0;
}

// The division facts of the manifest (runs/official_registry.h) join the plan here.
ForgetOutcome plugin_forget(const ForgetArgs& a, spdlog::logger& log) {
  PluginForget plan = plan_plugin_forget(a);
  plan.choices = run_choices(kForgettingTask, plan.manifest_label, plan.manifest.text, &plan.release);
  return forget_plugin(a, plan, log);
}

}  // namespace

int forget_command(const ForgetArgs& a) {
  load_best_blas_kernels();  // may start the program again: before the lock below
  const int modes = (a.plugin ? 1 : 0) + (a.torchscript ? 1 : 0) + (a.compare.empty() ? 0 : 1);
  if (modes != 1)
    throw Error(ErrorKind::usage, "lrahost forget needs exactly one of --plugin NAME|PATH, --torchscript FILE or "
                                  "--compare A.json B.json ...");
  // One writer per output directory (common/dir_lock.h); created now, removed
  // again when the command fails before writing anything into it.
  const DirLock lock(a.out);
  if (!a.compare.empty()) return compare_command(a);
  configure_cpu_threads(effective_threads(a.threads));
  auto log = make_logger();
  print_outcome(a.plugin ? plugin_forget(a, *log) : forget_torchscript(a, *log));
  return 0;
}

void add_forget_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<ForgetArgs>();
  auto* f = app.add_subcommand("forget", "Forgetting curve: train a causal LM around a mixer (or load a TorchScript "
                                         "LM) and measure how far back it copies its context");
  f->add_option("--plugin", a->plugin, std::string(kMixerPluginHelp) + ", trained in the manifest's causal LM");
  f->add_option("--torchscript", a->torchscript, "A causal LM saved as TorchScript: forward(ids [1,T]) -> logits [1,T,V]");
  f->add_option("--compare", a->compare, "forgetting.json files or the reference tool's result files (JSON lists) to "
                                         "overlay in one plot (compare.svg), with their memory lengths");
  f->add_option("--out", a->out, "Output directory")->required();
  add_preset_option(f, a->preset, "official (forgetting-v1) or smoke (CPU-sized)");
  f->add_option("--manifest", a->manifest, "A forgetting manifest file instead of the preset (open division)");
  f->add_option("--set", a->sets, "KEY=VALUE manifest override (open division) or mixer.OPTION=VALUE");
  f->add_option("--corpus", a->corpus, "Text FILE or DIR of .txt files (default: the Brown corpus)");
  f->add_option("--ids", a->ids_file, "--torchscript only: evaluation text as raw little-endian int32 token ids");
  f->add_option("--bos", a->bos, "--torchscript only: the separator id ([bos] S [bos] S [eos])");
  f->add_option("--eos", a->eos, "--torchscript only: the end id");
  f->add_option("--train-len", a->train_len, "--torchscript only: the model's training length (reference lines)");
  f->add_option("--max-len", a->max_len, "Longest tested length L (default: the manifest's data.test_max_length)");
  f->add_option("--granularity", a->granularity, "Number of tested lengths (default: the manifest's)");
  f->add_option("--granularity-type", a->granularity_type, "linear or log spacing of the lengths")
      ->check(CLI::IsMember({"linear", "log"}));
  f->add_option("--repeats", a->repeats, "Samples per length (default: the manifest's)");
  add_seed_option(f, a->seed, "Sampling seed (default: the manifest's data.sample_seed)");
  f->add_option("--batch-tokens", a->batch_tokens, "Tokens per forward pass while measuring (default 65536)")
      ->check(CLI::NonNegativeNumber);
  f->add_option("--title", a->title, "--compare only: plot title");
  f->add_flag("--log-x", a->log_x, "Logarithmic length axis in the plots");
  add_fp32_flag(f, a->fp32, "On CUDA, train and measure in float32 instead of bfloat16 autocast");
  add_device_option(f, a->device);
  add_threads_option(f, a->threads);
  on_parsed(f, slot, a, [&slot](ForgetArgs& args) {
    args.command_line = slot.command_line;
    return forget_command(args);
  });
}

}  // namespace lra::host
