// copy_demo: a sequence task (SDK 1.4) in one file. Each example is `length`
// random symbols, a separator, then the same symbols again; the target at
// every position of the copy is the next symbol to write, so a causal model
// scores only where it must recall what it read. The examples are drawn in
// memory from the [data] seed: deterministic, no files.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <lra/task.h>

namespace {

constexpr int32_t kSeparator = 0;  // symbols are 1..symbols

std::vector<lra::OptionSpec> options() {
  return {
      {"length", int64_t{16}, "symbols to copy"},
      {"symbols", int64_t{8}, "alphabet size"},
      {"train_size", int64_t{2000}, "training examples"},
      {"val_size", int64_t{200}, "validation examples"},
      {"test_size", int64_t{200}, "test examples"},
      {"seed", int64_t{0}, "the examples' random stream"},
  };
}

// One split: the source tokens in Split, the targets in SplitTargets.
void draw(int64_t n, int64_t length, int64_t symbols, std::mt19937_64& rng, lra::Split& split,
          lra::SplitTargets& targets) {
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> source(length);
    // rng() % symbols: fine for an example (std:: distributions differ between libraries).
    for (auto& s : source) s = 1 + static_cast<int32_t>(rng() % static_cast<uint64_t>(symbols));
    // tokens:  s0 s1 .. s(n-1) SEP s0 s1 .. s(n-2)
    // targets: -   -  ..  -    s0  s1 .. s(n-1)      (at SEP the model writes s0, and so on)
    for (int64_t t = 0; t < length; ++t) split.tokens.push_back(source[t]), targets.targets.push_back(lra::kIgnoreTarget);
    split.tokens.push_back(kSeparator);
    targets.targets.push_back(source[0]);
    for (int64_t t = 0; t + 1 < length; ++t) split.tokens.push_back(source[t]), targets.targets.push_back(source[t + 1]);
    split.offsets.push_back(static_cast<int64_t>(split.tokens.size()));
  }
}

class CopyTask final : public lra::TaskPlugin {
 public:
  lra::Status data_options(std::vector<lra::OptionSpec>* out) const noexcept override {
    return lra::guarded([&] { *out = options(); });
  }

  lra::Status load(const lra::DataRequest& request, lra::Dataset* out) const noexcept override {
    return lra::guarded([&] {
      lra::ParamReader r(request.params, "copy_demo [data]");
      const int64_t length = r.get_int("length"), symbols = r.get_int("symbols");
      if (length < 1 || symbols < 1)
        throw lra::Error(lra::ErrorKind::rules, "copy_demo [data]: length and symbols must be >= 1");
      *out = lra::Dataset{};
      out->info.vocab_size = symbols + 1;    // the separator and the symbols
      out->info.num_classes = 0;             // no labels: a sequence task
      out->info.natural_len = 2 * length;
      out->sequence.num_classes = symbols + 1;  // targets are symbols (0 never occurs as one)
      std::mt19937_64 rng(static_cast<uint64_t>(r.get_int("seed")));
      draw(r.get_int("train_size"), length, symbols, rng, out->train, out->sequence.train);
      draw(r.get_int("val_size"), length, symbols, rng, out->val, out->sequence.val);
      draw(r.get_int("test_size"), length, symbols, rng, out->test, out->sequence.test);
      out->source = "copy_demo, drawn in memory";
    });
  }

  lra::Status generate(const std::string&, const lra::Params&, int64_t, uint64_t, int) const noexcept override {
    return lra::Status::Error(lra::ErrorKind::usage, "copy_demo draws its examples in memory: nothing to generate");
  }
};

}  // namespace

LRA_TASK_PLUGIN("copy_demo", "1.0.0", "copy a random string after a separator (a sequence task example)", CopyTask)
