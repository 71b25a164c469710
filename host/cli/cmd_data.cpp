// `lrahost data generate` and `lrahost data check`.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <cstdio>

#include "cli/commands.h"
#include "common/dir_lock.h"
#include "device/device.h"
#include "data/task_data.h"
#include "lra/status.h"
#include "train/batches.h"

namespace lra::host {

namespace {

// --set KEY=VALUE of `data generate`, typed by the key's default (the task's data_options).
lra::Params data_sets(const LoadedPlugin& task, const std::vector<std::string>& sets) {
  std::vector<lra::OptionSpec> specs;
  if (auto st = task.task().data_options(&specs); !st.ok()) throw Error(st.kind, st.message);
  lra::Params out;
  for (const auto& set : sets) {
    const size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error(ErrorKind::usage, "--set " + set + ": expected KEY=VALUE (a [data] key of " + task.descriptor.name + ")");
    std::string key = set.substr(0, eq);
    if (key.rfind("data.", 0) == 0) key = key.substr(5);
    const std::string text = set.substr(eq + 1);
    const auto spec = std::find_if(specs.begin(), specs.end(), [&](const lra::OptionSpec& s) { return s.name == key; });
    if (spec == specs.end()) {
      out[key] = text;  // resolve_data_params names the valid keys
      continue;
    }
    try {
      size_t used = 0;
      switch (spec->default_value.index()) {
        case 0: out[key] = text == "true" ? true : text == "false" ? false : throw std::invalid_argument(text); break;
        case 1: out[key] = static_cast<int64_t>(std::stoll(text, &used)); break;
        case 2: out[key] = std::stod(text, &used); break;
        default: out[key] = text; used = text.size(); break;
      }
      if (spec->default_value.index() != 0 && used != text.size()) throw std::invalid_argument(text);
    } catch (const std::exception&) {
      throw Error(ErrorKind::usage, "--set " + set + ": '" + text + "' is not a valid value for data." + key);
    }
  }
  return out;
}

}  // namespace

int data_generate_command(const GenerateArgs& a) {
  check_output_dir_argument(a.out);  // empty, blank-named, a file: exit 2 before the generator runs
  const LoadedPlugin& task = open_plugin(a.generator, LRA_KIND_TASK);
  const lra::Params params = resolve_data_params(task, data_sets(task, a.sets), "lrahost data generate");
  if (a.n && *a.n < 1) throw Error(ErrorKind::usage, "--n " + std::to_string(*a.n) + ": expected at least 1 example");
  const int threads = effective_threads(a.threads);
  const auto start = std::chrono::steady_clock::now();
  // --n absent: the task's default size (ListOps 100,000; Pathfinder and Path-X 200,000).
  if (auto st = task.task().generate(a.out, params, a.n.value_or(0), a.seed, threads); !st.ok())
    throw Error(st.kind, st.message);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("generated %s %s data (seed %llu, %d threads) into %s in %.1f s\n",
              a.n ? (std::to_string(*a.n) + " examples of").c_str() : "the default-size", a.generator.c_str(),
              static_cast<unsigned long long>(a.seed), threads, a.out.c_str(), s);
  return 0;
}

int data_check_command(const CheckArgs& a) {
  const std::string& task_name = a.task;
  const LoadedPlugin& task = open_plugin(task_name, LRA_KIND_TASK);
  LoadedData d = load_task_data(task, data_sets(task, a.sets), data_root(a.data_dir), effective_threads(a.threads),
                                /*allow_generate=*/false, "lrahost data check");
  const auto& info = d.dataset.info;
  const bool sequence = d.dataset.is_sequence_task();
  std::printf("task          %s\n", task_name.c_str());
  std::printf("source        %s\n", d.dataset.source.c_str());
  std::printf("vocabulary    %lld ids\n", static_cast<long long>(info.vocab_size));
  std::printf("inputs        %s\n", info.paired ? "2 per example (paired; lengths below are per input)" : "1 per example");
  if (sequence)
    std::printf("targets       a target per position, %lld classes (a sequence task)%s\n",
                static_cast<long long>(d.dataset.sequence.num_classes),
                d.dataset.sequence.cell_names.empty()
                    ? ""
                    : (", " + std::to_string(d.dataset.sequence.cell_names.size()) + " cells").c_str());
  else
    std::printf("classes       %lld\n", static_cast<long long>(info.num_classes));
  if (d.dataset.sequence.readout == lra::SequenceReadout::from_last_state)  // SDK 1.5; the default goes unsaid
    std::printf("readout       from the last state: every target decoded from the example's last state\n");
  auto line = [&](const char* name, const lra::Split& s) {
    int64_t longest = 0, tokens = static_cast<int64_t>(s.tokens.size() + s.tokens2.size());
    for (const auto* off : {&s.offsets, &s.offsets2})
      for (size_t i = 0; i + 1 < off->size(); ++i) longest = std::max(longest, (*off)[i + 1] - (*off)[i]);
    const double inputs = static_cast<double>(s.size()) * (info.paired ? 2 : 1);
    std::printf("%-12s  %8zu examples, mean length %7.1f, max %6lld, ", name, s.size(),
                inputs > 0 ? tokens / inputs : 0.0, static_cast<long long>(longest));
    if (const auto* t = split_targets(d.dataset, s))
      std::printf("%lld scored positions, majority target %5.2f%%\n",
                  static_cast<long long>(scored_positions(s, *t, all_examples(s), longest)),
                  100 * majority_rate(d.dataset, s));
    else
      std::printf("majority class %5.2f%%\n", 100 * majority_rate(d.dataset, s));
  };
  line("train", d.dataset.train);
  line("val", d.dataset.val);
  line("test", d.dataset.test);
  std::printf("fingerprint   %s\n", d.fingerprint.c_str());
  return 0;
}

void add_data_command(CLI::App& app, CommandSlot& slot) {
  auto* data = app.add_subcommand("data", "Generate or check datasets");
  data->require_subcommand(1);
  auto gen = std::make_shared<GenerateArgs>();
  auto* g = data->add_subcommand("generate", "Generate a synthetic dataset (deterministic per seed)");
  g->add_option("generator", gen->generator, "listops, pathfinder or pathx (any task plugin with a generator)")
      ->required();
  g->add_option("--out", gen->out, "Output directory")->required();
  g->add_option("--n", gen->n, "Total number of examples (default: the task's LRA size)");
  g->add_option("--set", gen->sets, "KEY=VALUE: a [data] key of the task (e.g. max_depth=12 for listops, "
                                    "contour_length=6 for pathfinder); default: LRA's values");
  add_seed_option(g, gen->seed, "Generator seed");
  add_threads_option(g, gen->threads, "Threads (0 = all cores)");
  on_parsed(g, slot, gen, [](GenerateArgs& a) { return data_generate_command(a); });
  auto check = std::make_shared<CheckArgs>();
  auto* c = data->add_subcommand("check", "Validate a dataset; print counts per split and a fingerprint");
  c->add_option("--task", check->task, "Task name")->required();
  c->add_option("--data-dir", check->data_dir,
                 "Directory holding the dataset (default: $LRA_DATA_DIR or the user cache; tasks that draw their "
                 "examples in memory read none)");
  c->add_option("--set", check->sets, "KEY=VALUE: a [data] key of the task, for data drawn in memory (e.g. "
                                      "data.vocab_size=32 for mad_recall: the data of that setting); repeatable");
  add_threads_option(c, check->threads, "Threads (0 = all cores)");
  on_parsed(c, slot, check, [](CheckArgs& a) { return data_check_command(a); });
}

}  // namespace lra::host
