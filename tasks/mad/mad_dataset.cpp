#include "mad_dataset.h"

#include <string>

#include "task_util.h"

namespace lra::tasks::mad {

namespace {

// MAD draws 1,280 test examples (MADConfig.num_test_examples); it has no
// validation split (it validates on its test set), so ours draws as many
// from the same distribution on a stream of its own.
constexpr int64_t kTestExamples = 1280;
constexpr int64_t kMaxExamples = int64_t{1} << 24;

bool has_noise(Task t) { return t == Task::noisy_recall || t == Task::fuzzy_recall || t == Task::compression; }
bool has_query(Task t) { return t == Task::recall || t == Task::noisy_recall || t == Task::fuzzy_recall; }

std::string describe(const Config& c) {
  const Settings& s = c.settings;
  std::string d = "vocab " + std::to_string(s.vocab_size) + ", seq_len " + std::to_string(s.seq_len);
  if (s.task == Task::fuzzy_recall)
    d += ", key motifs 1-" + std::to_string(s.k_motif_size) + ", value motifs 1-" + std::to_string(s.v_motif_size);
  if (s.task == Task::selective_copy) d += ", " + std::to_string(s.num_tokens_to_copy) + " tokens to copy";
  if (has_noise(s.task) && s.frac_noise > 0)
    d += ", noise " + lra::to_string(Value{s.frac_noise}) + " over " + std::to_string(s.noise_vocab_size) + " tokens";
  if (has_query(s.task)) d += s.multi_query ? ", multi-query" : ", single query";
  if (s.task == Task::memorization) d += ", one key->value map from the seed";
  return d;
}

void fill_split(const Generator& g, bool training, int64_t examples, uint64_t stream, int threads, Split& split,
                SplitTargets& targets) {
  const int64_t len = g.length();
  split = Split{};
  targets = SplitTargets{};
  split.tokens.resize(examples * len);
  targets.targets.resize(examples * len);
  split.offsets.resize(examples + 1);
  for (int64_t i = 0; i <= examples; ++i) split.offsets[i] = i * len;
  parallel_for(
      examples, threads,
      [&](int64_t i) {
        g.draw(training, stream, static_cast<uint64_t>(i), split.tokens.data() + i * len,
               targets.targets.data() + i * len);
      },
      256);
}

}  // namespace

std::vector<OptionSpec> option_specs(Task task) {
  const Settings b = baseline(task);
  std::vector<OptionSpec> o = {
      {"vocab_size", b.vocab_size, "tokens, special ones included (MAD's vocab_size; the head predicts one of them)"},
      {"seq_len", b.seq_len,
       task == Task::recall || task == Task::noisy_recall
           ? "MAD's seq_len (multi-query examples are one token shorter after MAD's shift)"
       : task == Task::memorization ? "MAD's seq_len: seq_len / 2 key-insert pairs"
                                    : "MAD's seq_len"},
  };
  if (has_query(task))
    o.push_back(
        {"multi_query", b.multi_query, "score every repeated key's value, not only the final probe (MAD's default)"});
  if (task == Task::fuzzy_recall) {
    o.push_back({"k_motif_size", b.k_motif_size, "keys are 1..k distinct tokens (exactly k in evaluation)"});
    o.push_back({"v_motif_size", b.v_motif_size, "values are 1..v distinct tokens"});
  }
  if (has_noise(task)) {
    o.push_back({"noise_vocab_size", b.noise_vocab_size, "noise tokens, taken from the vocabulary"});
    o.push_back({"frac_noise", b.frac_noise, "probability that a slot (a pair, or a token in compression) is noise"});
  }
  if (task == Task::selective_copy)
    o.push_back({"num_tokens_to_copy", b.num_tokens_to_copy, "symbols to copy, in order, after the copy token"});
  o.push_back(
      {"num_train_examples", int64_t{task == Task::memorization ? 256 : 12800}, "training examples (MAD's baseline)"});
  o.push_back(
      {"num_val_examples", kTestExamples, "validation examples (MAD has none: drawn like the test set, own stream)"});
  o.push_back({"num_test_examples", kTestExamples, "test examples (MADConfig.num_test_examples)"});
  o.push_back({"seed", int64_t{12345}, "the examples' streams and memorization's map (MADConfig.seed)"});
  return o;
}

Config read_config(Task task, const Params& given) {
  const auto specs = option_specs(task);
  Params params;
  for (const auto& s : specs) params[s.name] = s.default_value;
  for (const auto& [k, v] : given) params[k] = v;
  const std::string who = task_name(task) + " [data]";
  ParamReader r(params, who);
  Config c;
  Settings& s = c.settings;
  s = baseline(task);
  s.vocab_size = r.get_int("vocab_size");
  s.seq_len = r.get_int("seq_len");
  if (has_query(task)) s.multi_query = r.get_bool("multi_query");
  if (task == Task::fuzzy_recall)
    s.k_motif_size = r.get_int("k_motif_size"), s.v_motif_size = r.get_int("v_motif_size");
  if (has_noise(task)) s.noise_vocab_size = r.get_int("noise_vocab_size"), s.frac_noise = r.get_float("frac_noise");
  if (task == Task::selective_copy) s.num_tokens_to_copy = r.get_int("num_tokens_to_copy");
  const int64_t seed = r.get_int("seed");
  if (seed < 0) throw Error(ErrorKind::rules, who + " seed: " + std::to_string(seed) + " is negative");
  c.seed = static_cast<uint64_t>(seed);
  s.seed = c.seed;
  validate(s);
  for (auto [key, n] : {std::pair<const char*, int64_t*>{"num_train_examples", &c.num_train},
                        {"num_val_examples", &c.num_val},
                        {"num_test_examples", &c.num_test}}) {
    *n = r.get_int(key);
    if (*n < 1 || *n > kMaxExamples)
      throw Error(ErrorKind::rules, who + " " + key + ": " + std::to_string(*n) + " is outside [1, 2^24]");
    if (*n * example_length(s) > (int64_t{1} << 31) - 1)
      throw Error(ErrorKind::rules, who + " " + key + ": " + std::to_string(*n) + " examples of " +
                                        std::to_string(example_length(s)) + " tokens exceed 2^31 tokens");
  }
  return c;
}

uint64_t split_stream(uint64_t seed, uint64_t split_tag) {
  uint64_t s = seed ^ (split_tag * 0x9E3779B97F4A7C15ull);
  return splitmix64(&s);
}

void load_dataset(Task task, const Params& params, int threads, Dataset* out) {
  const Config c = read_config(task, params);
  const Generator g(c.settings);
  *out = Dataset{};
  out->info.vocab_size = c.settings.vocab_size;
  out->info.num_classes = 0;  // a sequence task
  out->info.natural_len = c.settings.seq_len;
  out->sequence.num_classes = c.settings.vocab_size;  // MAD's head predicts a token
  // Compression's target at t is token t: MAD scores it with its AutoEncoder
  // (encoder -> last state -> MLP decoder), which a causal model would copy.
  if (task == Task::compression) out->sequence.readout = SequenceReadout::from_last_state;
  fill_split(g, true, c.num_train, split_stream(c.seed, 1), threads, out->train, out->sequence.train);
  fill_split(g, false, c.num_val, split_stream(c.seed, 2), threads, out->val, out->sequence.val);
  fill_split(g, false, c.num_test, split_stream(c.seed, 3), threads, out->test, out->sequence.test);
  out->source = "generated in memory: MAD's " + task_title(task) + " (athms/mad-lab instances.py distribution; " +
                describe(c) + "), seed " + std::to_string(c.seed);
}

}  // namespace lra::tasks::mad
