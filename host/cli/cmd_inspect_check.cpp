// `lrahost inspect --check PLUGIN`: the conformance checks (plugins/conformance.h)
// on a small model shape, each with its verdict, measured difference and time.
#include <chrono>
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "plugins/conformance.h"
#include "plugins/decode_check.h"
#include "plugins/gradient_check.h"
#include "plugins/mixer_options.h"
#include "plugins/mixer_factory.h"
#include "lra/status.h"
#include "device/device.h"
#include "manifest/presets.h"
#include "manifest/suites.h"
#include "model/backbone.h"
#include "model/summary_probe.h"
#include "model/task_shape.h"
#include "rules/rules.h"
#include "train/optimizer_groups.h"
#include "plugins/loader.h"

namespace lra::host {
namespace {

// What `run` decides or refuses before training, at the check shape on a
// ListOps-shaped classifier: where the head reads (the summary probe), and
// the optimizer hints (a hint run would refuse is exit 3 here too).
void print_run_preflight(const LoadedPlugin& mixer, const lra::Params& options, ModelConfig m, int64_t length) {
  m.pooling = "cls";
  m.positions = "sinusoidal";
  m.max_len = length;
  m.ffn_dim = m.d_model;
  const TaskShape shape = lra_task_shape("listops");
  const BackboneSpec spec{m, shape.vocab_size, shape.num_classes, 0, shape.paired};
  const MixerFactory make = plugin_mixer_factory(mixer, options);
  std::printf("before training, as run builds it (a classifier with CLS pooling, input [2, %lld])\n",
              static_cast<long long>(length));
  const GeneratorStates keep;
  const SummaryPosition summary = choose_summary_position(make, spec);
  std::printf("  %-16s %s\n", "summary",
              summary == SummaryPosition::first
                  ? "first: the mixer reads ahead, so the head reads position 0 (the CLS token), as LRA did"
                  : "after_last: the mixer does not read ahead (position 0 sees nothing later), so the head reads "
                    "the summary after each example's last real token (docs/rules.md#causal-mixers-and-the-summary-"
                    "token); MEAN pooling reads every position either way");
  torch::manual_seed(0);
  Classifier model(spec, make);
  const auto mixers = model->mixers();
  TrainConfig train = load_preset("listops", "smoke").train;
  const auto groups = optimizer_groups(*model, mixers, mixer.descriptor.abi_minor, mixer.descriptor.name, train);
  keep.rewind();
  if (groups.size() <= 1) std::printf("  %-16s none (every parameter: the manifest's weight decay and rate)\n", "optimizer hints");
  for (size_t g = 1; g < groups.size(); ++g)
    std::printf("  %-16s %zu tensor(s), %lld numbers: %s\n", g == 1 ? "optimizer hints" : "",
                groups[g].names.size(), static_cast<long long>(groups[g].elements), groups[g].rule.c_str());
}

// The parameter budget `run --preset official` checks on each LRA task, with
// the options run would give the mixer there (a built-in's reference settings,
// then --set): a task over budget is one run refuses (exit 4).
void print_official_budgets(const LoadedPlugin& mixer, const std::map<std::string, std::string>& given) {
  std::printf("  %-16s", "parameter budget");
  const GeneratorStates keep;
  torch::NoGradGuard no_grad;
  std::string over;
  bool first = true;
  for (const auto& task : suite_tasks(find_suite("lra"))) {
    const Manifest m = load_preset(task, "official");
    const TaskShape shape = lra_task_shape(task);
    const BackboneSpec spec{m.model, shape.vocab_size, shape.num_classes, 0, shape.paired};
    torch::manual_seed(0);
    const ParamBudget budget =
        compute_param_budget(count_parameters(*Classifier(spec, make_reference_attention)), m.rules.param_budget_ratio);
    const auto options = resolve_run_mixer_options(mixer, given, m).options;
    const int64_t total = count_parameters(*Classifier(spec, plugin_mixer_factory(mixer, options)));
    std::printf("%s%s %s of %s %s", first ? " " : "; ", task.c_str(), with_commas(total).c_str(),
                with_commas(budget.budget).c_str(), total <= budget.budget ? "ok" : "OVER");
    if (total > budget.budget) over += (over.empty() ? "" : ", ") + task;
    first = false;
  }
  keep.rewind();
  std::printf(" (official presets, the options run gives it there)\n");
  if (!over.empty())
    std::printf("  %-16s run --preset official refuses it on %s (exit 4): fewer parameters, or a smaller option\n", "",
                over.c_str());
}

}  // namespace

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
  const torch::Device device = pick_device(a.device);
  auto checks = check_conformance(mixer.descriptor.capabilities, plugin_mixer_factory(mixer, options), specs,
                                  {2, 0, false, 10000.0, device.str()});
  // The decoding promise bench --decode would time (SDK 1.3+ vtables only).
  ConformanceCheck decode;
  decode.name = "decode";
  if (!(mixer.descriptor.capabilities & LRA_CAP_CAUSAL)) {
    decode.detail = "not declared";
  } else if (mixer.descriptor.abi_minor < 3) {
    decode.detail = "not declared: built for SDK 1." + std::to_string(mixer.descriptor.abi_minor) +
                    ", before decode_step (1.3)";
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    GeneratorStates keep;
    decode = check_decode_parity(plugin_mixer_factory(mixer, options), specs.front(), device, 0, 2,
                                 /*has_prefill=*/mixer.descriptor.abi_minor >= 6);
    keep.rewind();
    decode.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  checks.push_back(decode);
  std::printf("conformance   %lld layers, input [2, %lld, %lld], %lld heads, %s\n", static_cast<long long>(a.layers),
              static_cast<long long>(a.length), static_cast<long long>(a.d_model), static_cast<long long>(a.heads),
              device.is_cuda() ? describe_device(device).c_str() : "CPU");
  for (const auto& c : checks) {
    std::printf("  %-16s %-7s", c.name.c_str(), c.status.c_str());
    if (c.status != "skipped") std::printf(" %8.3f s", c.seconds);
    if (c.status == "passed" && c.tolerance > 0) std::printf("  max difference %.3g (tolerance %.3g)", c.difference, c.tolerance);
    if (c.status == "skipped" && !c.detail.empty()) std::printf(" %s", c.detail.c_str());
    std::printf("\n");
  }
  const std::string summary = enforce_conformance(mixer.descriptor.name, checks);  // throws on a failure (exit 3)
  std::printf("%s\n", summary.c_str());
  print_run_preflight(mixer, options, m, a.length);  // what run decides or refuses before training
  print_official_budgets(mixer, given);
  if (!a.gradients) return 0;
  // On the CPU in float64: the first layer's spec, the options above.
  const auto grads = check_gradients(plugin_mixer_factory(mixer, options), specs.front(), 0);
  std::printf("gradients     input [2, %lld, %lld], the second example half padding, CPU\n",
              static_cast<long long>(a.length), static_cast<long long>(a.d_model));
  const GradientCheck* failed = nullptr;
  for (const auto& g : grads) {
    std::printf("  %-30s %-7s worst %.3g at %s (tolerance %.3g, %lld elements)\n", g.name.c_str(),
                g.passed ? "passed" : "FAILED", g.worst, g.worst_element.c_str(), g.tolerance,
                static_cast<long long>(g.elements));
    if (!g.passed && !failed) failed = &g;
  }
  if (failed)
    throw Error(ErrorKind::plugin, "plugin '" + mixer.descriptor.name + "' failed the gradient check '" + failed->name +
                                       "': worst error " + std::to_string(failed->worst) + " at " +
                                       failed->worst_element + " (tolerance " + std::to_string(failed->tolerance) +
                                       "; docs/writing-a-plugin.md#checking-gradients)");
  return 0;
}

void add_inspect_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<InspectArgs>();
  auto* in = app.add_subcommand("inspect", "Show a plugin's descriptor, build facts, compatibility and options");
  in->add_option("plugin", a->plugin, "PATH to a .so or a plugin NAME")->required();
  in->add_flag("--check", a->check,
               "Also run the conformance checks (shape, finite, deterministic, padding_mask, causal, "
               "attention_probs, decode) on small random inputs; a failed check is exit 3");
  in->add_option("--length", a->checks.length, "--check: sequence length")->capture_default_str();
  in->add_option("--d-model", a->checks.d_model, "--check: model width (also the q/k/v width)")->capture_default_str();
  in->add_option("--heads", a->checks.heads, "--check: heads")->capture_default_str();
  in->add_option("--layers", a->checks.layers, "--check: layers (one mixer each)")->capture_default_str();
  in->add_option("--set", a->checks.sets, "--check: mixer.NAME=VALUE, the plugin's own options");
  in->add_flag("--gradients", a->checks.gradients,
               "--check: also check the mixer's gradients in float64 against finite differences, and its float32 "
               "gradients against float64 ones (worst element named; a failure is exit 3)");
  in->add_option("--device", a->checks.device, "--check: where the checks run")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  on_parsed(in, slot, a, [](InspectArgs& args) {
    const int rc = inspect_command(args.plugin);
    return rc != 0 || !args.check ? rc : inspect_check_command(args.plugin, args.checks);
  });
}

}  // namespace lra::host
