// bench/bench_run.cpp — see bench_run.h.
#include "bench/bench_run.h"

#include <chrono>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "bench/measure_step.h"
#include "bench/remaining_time.h"
#include "common/atomic_file.h"
#include "common/build_info.h"
#include "common/json_input.h"
#include "common/utc_time.h"
#include "runs/child_runs.h"
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
  std::vector<std::pair<std::string, int64_t>> remaining;  // in the order they are measured
  for (const LoadedPlugin* p : loaded)
    for (int64_t L : lengths) remaining.emplace_back(p->descriptor.name, L);
  RemainingTime eta;
  for (const LoadedPlugin* p : loaded) {
    const auto factory = plugin_mixer_factory(*p, resolve_mixer_options(*p, {}));
    for (int64_t L : lengths) {
      // What is being measured, before the silence of measuring it; the time
      // left is predicted from the configurations measured so far.
      const auto now = std::chrono::steady_clock::now();
      const double elapsed = std::chrono::duration<double>(now - start).count();
      log.info("{} measuring {} at L={}",
               progress_text(points.size(), total, elapsed,
                             eta.estimate({remaining.begin() + static_cast<std::ptrdiff_t>(points.size()), remaining.end()})),
               p->descriptor.name, L);
      StepBenchOptions po = o;
      po.mixer_capabilities = p->descriptor.capabilities;
      auto pt = measure_training_steps(p->descriptor.name, factory, L, po);
      eta.record(p->descriptor.name, L, std::chrono::duration<double>(std::chrono::steady_clock::now() - now).count());
      if (p->descriptor.name == "transformer" && pt.status == "ok") {
        pt.flops_per_step = softmax_transformer_flops_per_step(o.model, o.batch, L);
        if (auto peak = peak_flops(o.device, o.bf16)) pt.mfu = *pt.flops_per_step * pt.steps_per_s / *peak;
      }
      if (pt.status == "ok") {
        const Spread r = spread_of(pt);
        log.info("{:<20} L={:<6} {:8.3f} steps/s (repetitions {:.3g}-{:.3g}, spread {:.0f}%)  {:12.0f} tokens/s  peak {:.2f} GB",
                 pt.plugin, L, pt.steps_per_s, r.min, r.max, 100 * r.fraction, pt.tokens_per_s, pt.peak_memory_bytes / 1e9);
        if (const std::string w = speed_warning(pt); !w.empty())
          log.warn("{} at L={}: not a clean measurement: {}; measure again before citing it", pt.plugin, L, w);
      } else
        log.warn("{:<20} L={:<6} {}: {}", pt.plugin, L, pt.status == "oom" ? "OOM" : "FAILED", pt.error);
      points.push_back(std::move(pt));
    }
  }
  return points;
}

// Several plugins: each is measured by `lrahost bench` in a process of its
// own, whose output is shown as it comes. A process's peak resident memory
// can be reset only down to what is resident, and what earlier plugins left
// there (a Python interpreter's heap, allocator caches) stays: in one process
// a plugin's peak depended on what ran before it. The children's bench.json
// files are read back and then removed.
std::vector<BenchPoint> measure_each_in_own_process(const BenchArgs& a, const std::vector<std::string>& plugins,
                                                    spdlog::logger& log) {
  std::string pattern = (fs::temp_directory_path() / "lrahost-bench-XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    throw Error(ErrorKind::storage, "bench: cannot make a scratch folder under " + fs::temp_directory_path().string());
  const fs::path scratch = pattern;
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{scratch};
  std::vector<BenchPoint> points;
  for (std::size_t i = 0; i < plugins.size(); ++i) {
    const fs::path out = scratch / std::to_string(i);
    std::vector<std::string> args = {"bench", "--plugins", plugins[i], "--lengths", a.lengths,
                                     "--batch", std::to_string(a.batch), "--warmup", std::to_string(a.warmup),
                                     "--steps", std::to_string(a.steps), "--repeats", std::to_string(a.repeats),
                                     "--device", a.device, "--out", out.string()};
    if (a.fp32) args.push_back("--fp32");
    args.insert(args.end(), {"--cuda-graphs", a.cuda_graphs});
    if (a.threads > 0) args.insert(args.end(), {"--threads", std::to_string(a.threads)});
    log.info("[plugin {}/{}] {}, in a process of its own (its peak memory independent of the others)", i + 1,
             plugins.size(), plugins[i]);
    const int code = run_self(args, "/dev/stderr");
    if (code != 0) {
      const bool known = code >= 1 && code <= 8 && code != 6;
      throw Error(known ? static_cast<ErrorKind>(code) : ErrorKind::plugin,
                  "bench: measuring " + plugins[i] + " in its own process failed (exit " + std::to_string(code) +
                      "; its messages are above); nothing was written");
    }
    const fs::path file = out / "bench.json";
    auto more = bench_points_from_json(read_json_file("bench.json", file.string()), file.string());
    points.insert(points.end(), more.begin(), more.end());
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
  checked_graph_request(a.cuda_graphs, pick_device(a.device));  // --cuda-graphs on without CUDA: exit 2, nothing written
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
  o.cuda_graphs = a.cuda_graphs;
  log.info("bench: {} plugins x {} lengths, batch {}, {} warm-up + {} x {} timed steps, {} {}", plugins.size(),
           lengths.size(), a.batch, a.warmup, a.repeats, a.steps, describe_device(o.device),
           o.bf16 ? "bfloat16 autocast" : "float32");
  const std::vector<BenchPoint> points =
      loaded.size() > 1 ? measure_each_in_own_process(a, plugins, log) : measure_all(loaded, lengths, o, log);

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
