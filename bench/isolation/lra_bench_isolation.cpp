// lra_bench_isolation: what the process boundary of `verify --reevaluate`
// costs (issue 43). Evaluates a trained run's test split twice and prints
// one JSON line with the medians:
//   in_process_s  the model rebuilt and model.pt loaded in this process,
//                 predict() over the test split (what the verifier did before);
//   isolated_s    the same model with every mixer in a confined mixer process
//                 (isolation/mixer_process.h, bubblewrap unless --no-sandbox):
//                 process start, creation, tensors sent, predict() over the split;
//   ratio         isolated_s / in_process_s;
//   isolated_after_start_s, ratio_after_start: the same from the moment the
//                 process is ready (start_s: its start, LibTorch's loading and the
//                 plugin's opening, ~0.4 s here): in `verify --reevaluate` the
//                 process starts before the run's data are prepared, so its start
//                 overlaps that work (reevaluation.json: isolation.start_wait_seconds
//                 says how much was left to wait). Issue 43's target: <= 1.5 on the
//                 smoke ListOps test set on CPU;
// and whether both ways gave the same prediction for every example.
//
//   lra_bench_isolation --run runs/listops-smoke --reps 3 [--data-dir D] [--threads 2]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "lra/status.h"
#include "plugins/loader.h"
#include "isolation/cpu_turns.h"
#include "isolation/mixer_process.h"
#include "isolation/remote_mixer.h"
#include "isolation/sandbox.h"
#include "runs/trained_run.h"
#include "train/module_io.h"
#include "train/trainer.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times a run's test split evaluated in process and with its mixers in a confined process"};
  std::string run_dir, data_dir, lrahost = LRAHOST_BIN;
  int threads = 2, reps = 3;
  bool no_sandbox = false, one_thread_turns = false;
  app.add_option("--run", run_dir, "A run folder written by lrahost run")->required();
  app.add_option("--data-dir", data_dir, "Data root (default: as for run)");
  app.add_option("--threads", threads)->capture_default_str();
  app.add_option("--reps", reps)->capture_default_str();
  app.add_option("--lrahost", lrahost, "The lrahost binary that serves the mixer process")->capture_default_str();
  app.add_flag("--no-sandbox", no_sandbox, "Run the mixer process without bubblewrap");
  app.add_flag("--one-thread-turns", one_thread_turns,
               "Take turns with the mixer process on one verifier thread (before isolation/cpu_turns.h)");
  CLI11_PARSE(app, argc, argv);
  using namespace lra::host;
  try {
    configure_cpu_threads(threads);
    const RunRecord run = read_run_record(run_dir);
    const LoadedPlugin& mixer = open_run_mixer(run);
    const LoadedPlugin& task = open_plugin(run.task, LRA_KIND_TASK);
    const LoadedData data = load_run_data(run, task, data_dir.empty() ? std::nullopt : std::optional(data_dir), threads);
    const lra::Split& test = data.dataset.test;
    const lra::TaskInfo& info = data.dataset.info;
    const int64_t batch = recorded_evaluation_pass(run.result);
    std::vector<double> in_process, isolated, warm, start_s, call_s;
    bool identical = true;
    int64_t calls = 0;
    uint64_t bytes = 0;
    for (int rep = 0; rep < reps; ++rep) {
      auto t = Clock::now();
      Classifier local = load_trained_classifier(run, mixer, info, torch::kCPU);
      const std::vector<int32_t> expected = predict(local, test, run.model.max_len, batch, torch::kCPU, false);
      in_process.push_back(since(t));

      t = Clock::now();
      const fs::path scratch = fs::temp_directory_path() / ("lra-bench-isolation-" + std::to_string(getpid()));
      fs::create_directories(scratch);
      MixerProcessOptions o;
      o.exe = lrahost;
      o.plugin = mixer.descriptor.file.string();
      o.read_only = {mixer.descriptor.file};
      o.scratch = scratch;
      o.sandboxed = !no_sandbox;
      o.threads = threads;
      // As the verifier does while its mixers are in the mixer process
      // (isolation/cpu_turns.h), or the way before it: one thread.
      std::optional<CpuTurns> turns;
      if (one_thread_turns) configure_cpu_threads(1);
      else turns.emplace(threads);
      MixerProcess process(o);
      process.open();
      start_s.push_back(since(t));
      torch::manual_seed(run.seed);
      Classifier remote(BackboneSpec{run.model, info.vocab_size, info.num_classes, run.seed, info.paired, run.summary},
                        remote_mixer_factory(process, recorded_option_texts(run)));
      load_module(*remote, run.model_file, torch::kCPU);
      remote->eval();
      const std::vector<int32_t> got = predict(remote, test, run.model.max_len, batch, torch::kCPU, false);
      calls = process.stats().calls;
      call_s.push_back(process.stats().seconds);
      bytes = process.stats().bytes;
      process.stop();
      isolated.push_back(since(t));
      turns.reset();
      configure_cpu_threads(threads);
      warm.push_back(isolated.back() - start_s.back());
      fs::remove_all(scratch);
      identical = identical && got == expected;
    }
    const double a = median(in_process), b = median(isolated), c = median(warm);
    const nlohmann::json line = {{"run", run_dir},           {"plugin", run.plugin_name},
                                 {"task", run.task},         {"test_examples", test.size()},
                                 {"threads", threads},       {"reps", reps},
                                 {"sandbox", !no_sandbox},   {"turns", one_thread_turns ? "one thread" : CpuTurns::workers_can_sleep() ? "workers sleep" : "one thread (no OpenBLAS)"},   {"in_process_s", a},
                                 {"isolated_s", b},          {"ratio", b / a},
                                 {"isolated_after_start_s", c}, {"ratio_after_start", c / a},
                                 {"calls", calls},           {"bytes", bytes},
                                 {"start_s", median(start_s)}, {"seconds_in_calls", median(call_s)},
                                 {"identical_predictions", identical}};
    std::printf("%s\n", line.dump().c_str());
    return identical ? 0 : 1;
  } catch (const lra::Error& e) {
    std::fprintf(stderr, "lra_bench_isolation: %s\n", e.what());
    return static_cast<int>(e.kind());
  }
}
