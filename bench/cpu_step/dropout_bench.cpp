// lra_bench_dropout: nanoseconds per element of CPU dropout, LibTorch's
// at::dropout (bernoulli_ mask) against lra::ops::dropout (lra/dropout.h), on
// one tensor the size of the LRA Text attention probabilities at batch 4
// ([4, 4, 1001, 1001]); forward only, median of --reps, LibTorch's pool at
// --threads. Prints one JSON line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "lra/dropout.h"

namespace {

template <class Fn>
double median_ns_per_element(Fn&& fn, int64_t n, int reps) {
  std::vector<double> t;
  fn();  // warm-up: allocator and pages
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU dropout: at::dropout against lra::ops::dropout"};
  std::vector<int64_t> shape = {4, 4, 1001, 1001};
  int reps = 5, threads = 1;
  double p = 0.1;
  app.add_option("--shape", shape, "Tensor shape");
  app.add_option("--p", p, "Drop probability");
  app.add_option("--reps", reps, "Timed repetitions (median)");
  app.add_option("--threads", threads, "LibTorch intra-op threads");
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);
  torch::manual_seed(0);
  const auto x = torch::rand(shape);
  const int64_t n = x.numel();
  const double torch_ns = median_ns_per_element([&] { (void)at::dropout(x, p, true); }, n, reps);
  const double lra_ns = median_ns_per_element([&] { (void)lra::ops::dropout(x, p, true); }, n, reps);
  nlohmann::json j = {{"elements", n}, {"p", p}, {"threads", threads}, {"reps", reps},
                      {"at_dropout_ns_per_element", torch_ns}, {"lra_dropout_ns_per_element", lra_ns},
                      {"speedup", torch_ns / lra_ns}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
