// `lrahost data generate` and `lrahost data check`.
#include <cstdio>

#include "cli/commands.h"
#include "data/task_data.h"
#include "lra/status.h"
#include "train/batches.h"

namespace lra::host {

int data_generate_command(const GenerateArgs& a) {
  const LoadedPlugin& task = open_plugin(a.generator, LRA_KIND_TASK);
  const lra::Params params = resolve_data_params(task, {}, "lrahost data generate");
  const int64_t total = a.n.value_or(100000);
  if (total < 50)
    throw Error(ErrorKind::usage, "--n " + std::to_string(total) + " is too small: the 96/2/2 split needs at least 50");
  const int threads = effective_threads(a.threads);
  if (auto st = task.task().generate(a.out, params, total, a.seed, threads); !st.ok()) throw Error(st.kind, st.message);
  std::printf("generated %lld %s examples (seed %llu, %d threads) into %s\n", static_cast<long long>(total),
              a.generator.c_str(), static_cast<unsigned long long>(a.seed), threads, a.out.c_str());
  return 0;
}

int data_check_command(const std::string& task_name, const std::string& dir, int threads) {
  const LoadedPlugin& task = open_plugin(task_name, LRA_KIND_TASK);
  LoadedData d = load_task_data(task, {}, dir, effective_threads(threads), /*allow_generate=*/false, "lrahost data check");
  const auto& info = d.dataset.info;
  std::printf("task          %s\n", task_name.c_str());
  std::printf("source        %s\n", d.dataset.source.c_str());
  std::printf("vocabulary    %lld ids (0 = padding)\n", static_cast<long long>(info.vocab_size));
  std::printf("classes       %lld\n", static_cast<long long>(info.num_classes));
  auto line = [&](const char* name, const lra::Split& s) {
    int64_t longest = 0, tokens = static_cast<int64_t>(s.tokens.size());
    for (size_t i = 0; i + 1 < s.offsets.size(); ++i) longest = std::max(longest, s.offsets[i + 1] - s.offsets[i]);
    std::printf("%-12s  %8zu examples, mean length %7.1f, max %6lld, majority class %5.2f%%\n", name, s.size(),
                s.size() ? static_cast<double>(tokens) / s.size() : 0.0, static_cast<long long>(longest),
                100 * majority_class_rate(s, info.num_classes));
  };
  line("train", d.dataset.train);
  line("val", d.dataset.val);
  line("test", d.dataset.test);
  std::printf("fingerprint   %s\n", d.fingerprint.c_str());
  return 0;
}

}  // namespace lra::host
