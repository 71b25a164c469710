// Prints the peak memory of one forward + backward pass of each mixer plugin
// at several sequence lengths, each measured in a fresh child process (peak
// RSS growth over the moment just before the pass). With --check, exits 1 if
// an efficient plugin's memory grows quadratically or faster from the second-
// longest to the longest length. A printed measurement, not a timing.
//
//   lra_mixer_memory [--lengths 1024,2048,4096] [--batch 1] [--d-model 256] [--heads 4]
//                    [--check-subquadratic a,b,...] PLUGIN...
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/Parallel.h>

#include "lra/mixer.h"
#include "plugins/loader.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

long peak_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Runs in the child: returns the peak RSS growth in bytes, or -1 on error.
long long measure(const std::string& plugin, int64_t L, int64_t B, int64_t D, int64_t H) {
  try {
    const auto& p = lra::host::open_plugin(plugin, LRA_KIND_MIXER);
    std::vector<lra::OptionSpec> specs;
    if (!p.mixer().options(&specs).ok()) return -1;
    lra::Params opts;
    for (const auto& s : specs) opts[s.name] = s.default_value;
    lra::MixerSpec spec;
    spec.d_model = D;
    spec.heads = H;
    spec.qkv_dim = D;
    spec.max_len = L;
    std::shared_ptr<lra::Mixer> m;
    auto st = p.mixer().create(spec, opts, &m);
    if (!st.ok()) {
      std::fprintf(stderr, "%s: %s\n", plugin.c_str(), st.message.c_str());
      return -1;
    }
    torch::manual_seed(0);
    auto x = torch::randn({B, L, D}, torch::requires_grad());
    auto mask = torch::ones({B, L}, torch::kBool);
    const long before = peak_kib();
    m->forward(x, mask).sum().backward();
    return static_cast<long long>(peak_kib() - before) * 1024;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s at %lld: %s\n", plugin.c_str(), static_cast<long long>(L), e.what());
    return -1;
  }
}

long long measure_in_child(const std::string& plugin, int64_t L, int64_t B, int64_t D, int64_t H) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const long long v = measure(plugin, L, B, D, H);
    (void)!write(fds[1], &v, sizeof v);
    _exit(0);
  }
  close(fds[1]);
  long long v = -1;
  if (read(fds[0], &v, sizeof v) != sizeof v) v = -1;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> lengths = {1024, 2048, 4096};
  int64_t B = 1, D = 256, H = 4;
  std::set<std::string> efficient;
  std::vector<std::string> plugins;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--lengths") {
      lengths.clear();
      for (const auto& s : split(next())) lengths.push_back(std::stoll(s));
    } else if (a == "--batch") B = std::stoll(next());
    else if (a == "--d-model") D = std::stoll(next());
    else if (a == "--heads") H = std::stoll(next());
    else if (a == "--check-subquadratic") for (const auto& s : split(next())) efficient.insert(s);
    else plugins.push_back(a);
  }
  if (plugins.empty()) plugins = lra::host::available_plugin_names(LRA_KIND_MIXER);
  at::set_num_threads(1);

  std::printf("peak memory of forward+backward, batch %lld, d_model %lld, %lld heads (MiB)\n",
              static_cast<long long>(B), static_cast<long long>(D), static_cast<long long>(H));
  std::printf("%-20s", "plugin");
  for (auto L : lengths) std::printf(" %9lld", static_cast<long long>(L));
  std::printf("  growth of the last doubling\n");
  int failures = 0;
  for (const auto& p : plugins) {
    std::vector<long long> mem;
    std::printf("%-20s", p.c_str());
    for (auto L : lengths) {
      mem.push_back(measure_in_child(p, L, B, D, H));
      if (mem.back() < 0) std::printf(" %9s", "error");
      else std::printf(" %9.1f", mem.back() / 1048576.0);
      std::fflush(stdout);
    }
    double growth = 0;
    if (mem.size() >= 2 && mem[mem.size() - 2] > 0 && mem.back() > 0)
      growth = static_cast<double>(mem.back()) / static_cast<double>(mem[mem.size() - 2]);
    std::printf("  x%.2f", growth);
    if (efficient.count(p)) {
      // Doubling L: quadratic memory grows x4, linear x2. Allow headroom for
      // allocator granularity; anything >= 3 means an L x L tensor exists.
      const bool ok = growth > 0 && growth < 3.0;
      std::printf("  %s", ok ? "sub-quadratic" : "NOT sub-quadratic");
      if (!ok) ++failures;
    }
    std::printf("\n");
    for (auto v : mem) if (v < 0) ++failures;
  }
  return failures ? 1 : 0;
}
