// `lrahost bench`: the LRA paper's speed/memory protocol (Table 2) for any set
// of mixer plugins and lengths. Writes bench.json, bench.md and bench.svg
// into --out once every configuration has been measured.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <spdlog/spdlog.h>

#include "bench/bench_report.h"
#include "common/json_input.h"
#include "common/text.h"
#include "bench/measure_step.h"
#include "cli/commands.h"
#include "plugins/mixer_options.h"
#include "cli/console_log.h"
#include "common/utc_time.h"
#include "plugins/mixer_factory.h"
#include "common/atomic_file.h"
#include "common/dir_lock.h"
#include "common/build_info.h"
#include "device/device.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "plugins/descriptor.h"
#include "results/system_info.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;

// The JSON document in `file`, given by `option`; errors are usage errors naming both.
nlohmann::json read_json_option(const std::string& option, const std::string& file) {
  std::ifstream in(file);
  if (!in) throw Error(ErrorKind::usage, option + " " + file + ": cannot read the file");
  try {
    return parse_json_input(in);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::usage, option + " " + file + ": not JSON: " + e.what());
  }
}

// Mean test accuracy (%) per plugin over the given result.json files.
std::map<std::string, double> accuracies_from_results(const std::vector<std::string>& files) {
  std::map<std::string, std::pair<double, int>> sum;
  for (const auto& f : files) {
    nlohmann::json j = read_json_option("--accuracy", f);
    const auto* name = j.contains("plugin") ? &j["plugin"]["name"] : nullptr;
    const auto* acc = j.contains("metrics") ? &j["metrics"]["test_accuracy"] : nullptr;
    if (!name || !name->is_string() || !acc || !acc->is_number())
      throw Error(ErrorKind::usage, "--accuracy " + f + ": expected a result.json with plugin.name and metrics.test_accuracy");
    auto& s = sum[name->get<std::string>()];
    s.first += 100.0 * acc->get<double>();
    s.second += 1;
  }
  std::map<std::string, double> out;
  for (const auto& [k, v] : sum) out[k] = v.first / v.second;
  return out;
}

}  // namespace

// --report: merges earlier bench.json files (e.g. one per plugin) into one set
// of reports without measuring anything.
int bench_report_command(const BenchArgs& a) {
  std::vector<bench::BenchPoint> points;
  for (const auto& f : a.report) {
    auto more = bench::bench_points_from_json(read_json_option("--report", f), f);
    points.insert(points.end(), more.begin(), more.end());
  }
  const auto accuracy = accuracies_from_results(a.accuracy);
  const fs::path out = a.out;
  if (fs::exists(out / "bench.json"))
    throw Error(ErrorKind::usage, "output directory " + out.string() + " already holds a bench.json; choose another --out");
  nlohmann::json doc = {{"schema", "lrahost.bench/v1"},
                        {"results", bench::bench_points_json(points)},
                        {"merged_from", a.report},
                        {"accuracy_percent", accuracy},
                        {"finished_at", utc_now()}};
  write_files_atomic(out, {{"bench.json", doc.dump(2) + "\n"},  // all three or none
                           {"bench.md", bench::bench_markdown(points)},
                           {"bench.svg", bench::bench_svg(points, accuracy)}});
  std::printf("%s\nresults: %s, bench.md, bench.svg\n", bench::bench_markdown(points).c_str(), (out / "bench.json").c_str());
  return 0;
}

int bench_command(const BenchArgs& a) {
  // One writer per output directory (common/dir_lock.h); created now, removed
  // again when the command fails before writing anything into it.
  const DirLock lock(a.out);
  if (!a.report.empty()) return bench_report_command(a);
  configure_cpu_threads(effective_threads(a.threads));
  auto log = make_logger();
  std::vector<std::string> plugins = a.plugins.empty() || a.plugins == "all" ? available_plugin_names(LRA_KIND_MIXER)
                                                                             : text::split_list(a.plugins);
  std::vector<int64_t> lengths;
  for (const auto& s : text::split_list(a.lengths)) {
    try {
      size_t used = 0;
      const long long v = std::stoll(s, &used);
      if (used != s.size() || v < 1) throw std::invalid_argument(s);
      lengths.push_back(v);
    } catch (const std::exception&) {
      throw Error(ErrorKind::usage, "--lengths: '" + s + "' is not a positive integer (e.g. --lengths 1024,2048,3072,4096)");
    }
  }
  if (plugins.empty() || lengths.empty()) throw Error(ErrorKind::usage, "--plugins and --lengths must name at least one value");
  if (a.batch < 1 || a.steps < 1 || a.repeats < 1 || a.warmup < 0)
    throw Error(ErrorKind::usage, "--batch, --steps and --repeats must be >= 1 and --warmup >= 0");
  const auto accuracy = accuracies_from_results(a.accuracy);

  // Every plugin is resolved before anything is measured: a typo fails in a second, not after an hour.
  std::vector<const LoadedPlugin*> loaded;
  for (const auto& p : plugins) loaded.push_back(&open_plugin(p, LRA_KIND_MIXER));
  const fs::path out = a.out;
  if (fs::exists(out / "bench.json"))
    throw Error(ErrorKind::usage, "output directory " + out.string() + " already holds a bench.json; choose another --out");

  const Manifest text = load_preset("text", "official");
  bench::StepBenchOptions o;
  o.model = text.model;
  o.train = text.train;
  o.batch = a.batch;
  o.warmup = a.warmup;
  o.steps = a.steps;
  o.repeats = a.repeats;
  o.device = pick_device(a.device);
  o.bf16 = o.device.is_cuda() && !a.fp32;
  log->info("bench: {} plugins x {} lengths, batch {}, {} warm-up + {} x {} timed steps, {} {}", plugins.size(),
            lengths.size(), a.batch, a.warmup, a.repeats, a.steps, describe_device(o.device),
            o.bf16 ? "bfloat16 autocast" : "float32");

  std::vector<bench::BenchPoint> points;
  for (const LoadedPlugin* p : loaded) {
    const auto factory = plugin_mixer_factory(*p, resolve_mixer_options(*p, {}));
    for (int64_t L : lengths) {
      auto pt = bench::measure_training_steps(p->descriptor.name, factory, L, o);
      if (p->descriptor.name == "transformer" && pt.status == "ok") {
        pt.flops_per_step = bench::softmax_transformer_flops_per_step(o.model, a.batch, L);
        if (auto peak = peak_flops(o.device, o.bf16)) pt.mfu = *pt.flops_per_step * pt.steps_per_s / *peak;
      }
      if (pt.status == "ok")
        log->info("{:<20} L={:<6} {:8.3f} steps/s  {:12.0f} tokens/s  peak {:.2f} GB", pt.plugin, L, pt.steps_per_s,
                  pt.tokens_per_s, pt.peak_memory_bytes / 1e9);
      else
        log->warn("{:<20} L={:<6} {}: {}", pt.plugin, L, pt.status == "oom" ? "OOM" : "FAILED", pt.error);
      points.push_back(std::move(pt));
    }
  }

  nlohmann::json doc = {
      {"schema", "lrahost.bench/v1"},
      {"results", bench::bench_points_json(points)},
      {"protocol",
       {{"backbone", text.source},
        {"model", to_json(text)["model"]},
        {"batch", a.batch},
        {"warmup_steps", a.warmup},
        {"timed_steps", a.steps},
        {"repetitions", a.repeats},
        {"statistic", "median of the repetitions' steps/s"},
        {"step", "forward, cross-entropy, backward, gradient clipping, AdamW update; evaluation and data loading excluded"},
        {"inputs", "random token ids, no padding, resident on the device"}}},
      {"host", {{"version", build_info().version}, {"git_revision", build_info().git_revision},
                {"torch_version", host_descriptor().torch_version}}},
      {"system", system_info()},
      {"accuracy_percent", accuracy},
      {"finished_at", utc_now()},
  };
  write_files_atomic(out, {{"bench.json", doc.dump(2) + "\n"},  // all three or none
                           {"bench.md", bench::bench_markdown(points)},
                           {"bench.svg", bench::bench_svg(points, accuracy)}});
  std::printf("\n%s", bench::bench_markdown(points).c_str());
  std::printf("\nresults: %s, bench.md, bench.svg\n", (out / "bench.json").c_str());
  return 0;
}

void add_bench_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<BenchArgs>();
  auto* b = app.add_subcommand("bench", "Training speed and peak memory per plugin and length (the LRA paper's "
                                        "Table 2 protocol, Text backbone)");
  b->add_option("--plugins", a->plugins, "Comma-separated mixer plugins (names or paths), or all");
  b->add_option("--lengths", a->lengths, "Comma-separated sequence lengths");
  b->add_option("--batch", a->batch, "Examples per step (LRA: 32)");
  b->add_option("--warmup", a->warmup, "Untimed steps first (allocator, kernels, caches)");
  b->add_option("--steps", a->steps, "Steps per timed repetition");
  b->add_option("--repeats", a->repeats, "Timed repetitions (the median is reported)");
  b->add_option("--accuracy", a->accuracy, "result.json files: mean test accuracy per plugin for the speed/accuracy chart");
  b->add_option("--report", a->report, "Merge these bench.json files into one bench.json/md/svg; measure nothing");
  b->add_option("--out", a->out, "Output directory (bench.json, bench.md, bench.svg)");
  add_device_option(b, a->device);
  add_fp32_flag(b, a->fp32);
  add_threads_option(b, a->threads);
  on_parsed(b, slot, a, [](BenchArgs& args) { return bench_command(args); });
}

}  // namespace lra::host
