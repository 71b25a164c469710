// bench/bench_run.cpp — see bench_run.h.
#include "bench/bench_run.h"

#include <chrono>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "bench/measure_step.h"
#include "common/atomic_file.h"
#include "common/build_info.h"
#include "common/json_input.h"
#include "common/utc_time.h"
#include "device/device.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "common/text.h"
#include "plugins/descriptor.h"
#include "plugins/loader.h"
#include "plugins/mixer_factory.h"
#include "plugins/mixer_options.h"
#include "plugins/python_mixer.h"
#include "results/system_info.h"

namespace lra::host::bench {
namespace {

namespace fs = std::filesystem;

// `file` read as JSON; a missing or malformed file is a usage error naming `option`.
nlohmann::json read_json_file(const std::string& option, const std::string& f) {
  std::ifstream in(f);
  if (!in) throw Error(ErrorKind::usage, option + " " + f + ": cannot read the file");
  try {
    return parse_json_input(in);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::usage, option + " " + f + ": not JSON: " + e.what());
  }
}

// Mean test accuracy (%) per plugin over the given result.json files.
std::map<std::string, double> accuracies_from_results(const std::vector<std::string>& files) {
  std::map<std::string, std::pair<double, int>> sum;
  for (const auto& f : files) {
    nlohmann::json j = read_json_file("--accuracy", f);
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

// bench.json (doc with the points' results), bench.md and bench.svg: all three or none.
BenchOutcome write_reports(const fs::path& out, nlohmann::json doc, const std::vector<BenchPoint>& points,
                           const std::map<std::string, double>& accuracy) {
  BenchOutcome r{out, bench_markdown(points)};
  write_files_atomic(out, {{"bench.json", doc.dump(2) + "\n"},
                           {"bench.md", r.markdown},
                           {"bench.svg", bench_svg(points, accuracy)}});
  return r;
}


// Every (plugin, length) configuration, in order; a failure is a point, not an error.
std::vector<BenchPoint> measure_all(const std::vector<const LoadedPlugin*>& loaded, const std::vector<int64_t>& lengths,
                                    const StepBenchOptions& o, spdlog::logger& log) {
  std::vector<BenchPoint> points;
  const auto start = std::chrono::steady_clock::now();
  const std::size_t total = loaded.size() * lengths.size();
  for (const LoadedPlugin* p : loaded) {
    const auto factory = plugin_mixer_factory(*p, resolve_mixer_options(*p, {}));
    for (int64_t L : lengths) {
      // What is being measured, before the silence of measuring it.
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      log.info("{} measuring {} at L={}", text::progress_note(points.size(), total, elapsed), p->descriptor.name, L);
      auto pt = measure_training_steps(p->descriptor.name, factory, L, o);
      if (p->descriptor.name == "transformer" && pt.status == "ok") {
        pt.flops_per_step = softmax_transformer_flops_per_step(o.model, o.batch, L);
        if (auto peak = peak_flops(o.device, o.bf16)) pt.mfu = *pt.flops_per_step * pt.steps_per_s / *peak;
      }
      if (pt.status == "ok")
        log.info("{:<20} L={:<6} {:8.3f} steps/s  {:12.0f} tokens/s  peak {:.2f} GB", pt.plugin, L, pt.steps_per_s,
                 pt.tokens_per_s, pt.peak_memory_bytes / 1e9);
      else
        log.warn("{:<20} L={:<6} {}: {}", pt.plugin, L, pt.status == "oom" ? "OOM" : "FAILED", pt.error);
      points.push_back(std::move(pt));
    }
  }
  return points;
}

nlohmann::json protocol_json(const BenchArgs& a, const Manifest& text) {
  return {{"backbone", text.source},
          {"model", to_json(text)["model"]},
          {"batch", a.batch},
          {"warmup_steps", a.warmup},
          {"timed_steps", a.steps},
          {"repetitions", a.repeats},
          {"statistic", "median of the repetitions' steps/s"},
          {"step", "forward, cross-entropy, backward, gradient clipping, AdamW update; evaluation and data loading excluded"},
          {"inputs", "random token ids, no padding, resident on the device"}};
}

}  // namespace

std::vector<int64_t> parse_lengths(const std::string& list) {
  std::vector<int64_t> lengths;
  for (const auto& s : text::split_list(list)) {
    try {
      size_t used = 0;
      const long long v = std::stoll(s, &used);
      if (used != s.size() || v < 1) throw std::invalid_argument(s);
      lengths.push_back(v);
    } catch (const std::exception&) {
      throw Error(ErrorKind::usage, "--lengths: '" + s + "' is not a positive integer (e.g. --lengths 1024,2048,3072,4096)");
    }
  }
  return lengths;
}

fs::path fresh_bench_out(const std::string& out, const std::string& report) {
  if (fs::exists(fs::path(out) / report))
    throw Error(ErrorKind::usage, "output directory " + out + " already holds a " + report + "; choose another --out");
  return out;
}

std::vector<std::string> bench_plugin_names(const std::string& plugins) {
  if (!plugins.empty() && plugins != "all") return text::split_list(plugins);
  std::vector<std::string> names = available_plugin_names(LRA_KIND_MIXER);
  names.erase(std::remove(names.begin(), names.end(), kPythonPluginName), names.end());
  return names;
}

BenchOutcome merge_bench_reports(const BenchArgs& a) {
  std::vector<BenchPoint> points;
  for (const auto& f : a.report) {
    auto more = bench_points_from_json(read_json_file("--report", f), f);
    points.insert(points.end(), more.begin(), more.end());
  }
  const auto accuracy = accuracies_from_results(a.accuracy);
  const fs::path out = fresh_bench_out(a.out);
  nlohmann::json doc = {{"schema", "lrahost.bench/v1"},
                        {"results", bench_points_json(points)},
                        {"merged_from", a.report},
                        {"accuracy_percent", accuracy},
                        {"finished_at", utc_now()}};
  return write_reports(out, std::move(doc), points, accuracy);
}

BenchOutcome run_bench(const BenchArgs& a, spdlog::logger& log) {
  const std::vector<std::string> plugins = bench_plugin_names(a.plugins);
  const std::vector<int64_t> lengths = parse_lengths(a.lengths);
  if (plugins.empty() || lengths.empty()) throw Error(ErrorKind::usage, "--plugins and --lengths must name at least one value");
  if (a.batch < 1 || a.steps < 1 || a.repeats < 1 || a.warmup < 0)
    throw Error(ErrorKind::usage, "--batch, --steps and --repeats must be >= 1 and --warmup >= 0");
  const auto accuracy = accuracies_from_results(a.accuracy);

  // Every plugin is resolved before anything is measured: a typo fails in a second, not after an hour.
  std::vector<const LoadedPlugin*> loaded;
  for (const auto& p : plugins) loaded.push_back(&open_plugin(p, LRA_KIND_MIXER));
  const fs::path out = fresh_bench_out(a.out);

  const Manifest text = load_preset("text", "official");
  StepBenchOptions o;
  o.model = text.model;
  o.train = text.train;
  o.batch = a.batch;
  o.warmup = a.warmup;
  o.steps = a.steps;
  o.repeats = a.repeats;
  o.device = pick_device(a.device);
  o.bf16 = o.device.is_cuda() && !a.fp32;
  log.info("bench: {} plugins x {} lengths, batch {}, {} warm-up + {} x {} timed steps, {} {}", plugins.size(),
           lengths.size(), a.batch, a.warmup, a.repeats, a.steps, describe_device(o.device),
           o.bf16 ? "bfloat16 autocast" : "float32");
  const std::vector<BenchPoint> points = measure_all(loaded, lengths, o, log);

  nlohmann::json doc = {
      {"schema", "lrahost.bench/v1"},
      {"results", bench_points_json(points)},
      {"protocol", protocol_json(a, text)},
      {"host", {{"version", build_info().version}, {"git_revision", build_info().git_revision},
                {"torch_version", host_descriptor().torch_version}}},
      {"system", system_info()},
      {"accuracy_percent", accuracy},
      {"finished_at", utc_now()},
  };
  return write_reports(out, std::move(doc), points, accuracy);
}

}  // namespace lra::host::bench
