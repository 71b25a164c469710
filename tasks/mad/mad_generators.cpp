#include "mad_generators.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "lra/status.h"

namespace lra::tasks::mad {

namespace {

constexpr int32_t kIgnore = -100;  // MAD's target_ignore_idx

std::string text(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  return s;
}

// `count` distinct tokens from [begin, begin + size), in the order drawn: a
// uniformly random ordered tuple (what MAD gets by choosing one of its
// shuffled itertools.permutations). Each draw skips the ones already taken.
std::vector<int32_t> motif(Rng& rng, int64_t begin, int64_t size, int64_t count) {
  std::vector<int64_t> taken;  // offsets, kept sorted
  std::vector<int32_t> out;
  for (int64_t i = 0; i < count; ++i) {
    int64_t r = static_cast<int64_t>(rng.below(static_cast<uint64_t>(size - i)));
    for (const int64_t t : taken) r += r >= t;
    taken.insert(std::upper_bound(taken.begin(), taken.end(), r), r);
    out.push_back(static_cast<int32_t>(begin + r));
  }
  return out;
}

int32_t pick(Rng& rng, int64_t begin, int64_t size) {
  return static_cast<int32_t>(begin + static_cast<int64_t>(rng.below(static_cast<uint64_t>(size))));
}

bool coin(Rng& rng, double p) { return p > 0 && rng.uniform() < p; }

// MAD shifts the recall tasks: tokens inputs[:-1]; targets inputs[1:] when
// training, targets[1:] otherwise.
void shift_out(bool training, const std::vector<int32_t>& in, const std::vector<int32_t>& tg, int32_t* tokens,
               int32_t* targets) {
  std::copy(in.begin(), in.end() - 1, tokens);
  const auto& src = training ? in : tg;
  std::copy(src.begin() + 1, src.end(), targets);
}

}  // namespace

namespace {

// Each task's plugin name and title: the one list (the plugins, messages and descriptions read it).
struct TaskNames {
  Task task;
  const char* plugin;
  const char* title;
};
constexpr TaskNames kTaskNames[] = {
    {Task::recall, "mad_recall", "in-context recall"},
    {Task::fuzzy_recall, "mad_fuzzy_recall", "fuzzy in-context recall"},
    {Task::noisy_recall, "mad_noisy_recall", "noisy in-context recall"},
    {Task::selective_copy, "mad_selective_copy", "selective copying"},
    {Task::compression, "mad_compression", "compression"},
    {Task::memorization, "mad_memorization", "memorization"},
};

const TaskNames& names_of(Task task) {
  for (const auto& n : kTaskNames)
    if (n.task == task) return n;
  return kTaskNames[0];  // unreachable: every Task is listed
}

}  // namespace

std::string task_name(Task task) { return names_of(task).plugin; }
std::string task_title(Task task) { return names_of(task).title; }

Settings baseline(Task task) {
  Settings s;  // MADConfig defaults: vocab 16, length 128, multi_query, no noise, motifs 1
  s.task = task;
  switch (task) {
    case Task::recall:
      break;
    case Task::fuzzy_recall:
      s.k_motif_size = s.v_motif_size = 3;
      break;
    case Task::noisy_recall:
      s.vocab_size = 32, s.noise_vocab_size = 16, s.frac_noise = 0.2;
      break;
    case Task::selective_copy:
      s.seq_len = 256, s.num_tokens_to_copy = 16;
      break;
    case Task::compression:
      s.seq_len = 32;
      break;
    case Task::memorization:
      s.vocab_size = 256, s.seq_len = 32;
      break;
  }
  return s;
}

Layout layout(const Settings& s) {
  Layout l;
  const int64_t V = s.vocab_size, nv = s.noise_vocab_size;
  const bool mq = s.multi_query;
  int64_t ns = 0;  // MAD's non_special_vocab_size
  switch (s.task) {
    case Task::recall:
    case Task::noisy_recall:
      ns = (mq ? V : V - 1) - nv;
      if (!mq) l.special = static_cast<int32_t>(V - 1);  // the copy prefix
      break;
    case Task::fuzzy_recall:
      ns = (mq ? V - 1 : V - 2) - nv;
      l.special = static_cast<int32_t>(V - 1);            // pad (multi-query) or copy prefix
      if (!mq) l.special2 = static_cast<int32_t>(V - 2);  // pad
      break;
    case Task::selective_copy:
      l.keys_end = l.values_end = l.noise_begin = V - 2;
      l.special = static_cast<int32_t>(V - 1), l.special2 = static_cast<int32_t>(V - 2);  // copy, blank
      return l;
    case Task::compression:
      ns = V - 1 - nv;
      l.keys_end = l.values_end = l.noise_begin = ns;
      l.special = static_cast<int32_t>(V - 1);
      return l;
    case Task::memorization:
      l.keys_end = (V - 1) / 2, l.values_end = l.noise_begin = V - 1;
      l.special = static_cast<int32_t>(V - 1);  // the insert token
      return l;
  }
  l.keys_end = ns / 2, l.values_end = ns, l.noise_begin = ns;
  return l;
}

void validate(const Settings& s) {
  const std::string who = task_name(s.task) + " [data] ";
  auto fail = [&](const std::string& option, const std::string& value, const std::string& why) {
    throw Error(ErrorKind::rules, who + option + ": " + value + " " + why);
  };
  const auto num = [](int64_t v) { return std::to_string(v); };
  if (s.vocab_size < 3 || s.vocab_size > (int64_t{1} << 24))
    fail("vocab_size", num(s.vocab_size), "is outside [3, 2^24]");
  if (s.seq_len < 2 || s.seq_len > (int64_t{1} << 22)) fail("seq_len", num(s.seq_len), "is outside [2, 2^22]");
  const bool noisy = s.task == Task::recall || s.task == Task::noisy_recall || s.task == Task::fuzzy_recall ||
                     s.task == Task::compression;
  if (noisy) {
    if (s.noise_vocab_size < 0) fail("noise_vocab_size", num(s.noise_vocab_size), "is negative");
    if (!(s.frac_noise >= 0 && s.frac_noise < 1))
      fail("frac_noise", text(s.frac_noise), "is outside [0, 1) (MAD's assertion)");
    if (s.frac_noise > 0 && s.noise_vocab_size == 0)
      fail("noise_vocab_size", "0", "must be > 0 when frac_noise > 0 (MAD's assertion)");
  }
  const Layout l = layout(s);
  const std::string vocab = "leaves " + num(std::max<int64_t>(l.values_end, 0)) + " tokens besides " +
                            num(s.noise_vocab_size) + " noise and the special ones for ";
  switch (s.task) {
    case Task::recall:
    case Task::noisy_recall:
      if (s.seq_len % 2 != 0) fail("seq_len", num(s.seq_len), "must be even (MAD's assertion)");
      if (s.seq_len < 4) fail("seq_len", num(s.seq_len), "is below 4: one key-value pair and the final probe");
      if (l.keys_end < 1) fail("vocab_size", num(s.vocab_size), vocab + "keys and values (needs 2)");
      break;
    case Task::fuzzy_recall:
      if (s.k_motif_size < 1) fail("k_motif_size", num(s.k_motif_size), "is below 1");
      if (s.v_motif_size < 1) fail("v_motif_size", num(s.v_motif_size), "is below 1");
      if (l.keys_end < s.k_motif_size || l.values_end - l.keys_end < s.v_motif_size)
        fail("vocab_size", num(s.vocab_size),
             vocab + "keys and values: fewer than k_motif_size " + num(s.k_motif_size) + " keys or v_motif_size " +
                 num(s.v_motif_size) + " values (a motif's tokens are distinct)");
      if (s.seq_len <= 2 * (s.k_motif_size + s.v_motif_size))
        fail("seq_len", num(s.seq_len), "must exceed 2 x (k_motif_size + v_motif_size) (where MAD places the probe)");
      break;
    case Task::selective_copy:
      if (s.num_tokens_to_copy < 1) fail("num_tokens_to_copy", num(s.num_tokens_to_copy), "is below 1");
      if (s.seq_len <= 2 * s.num_tokens_to_copy + 1)
        fail("seq_len", num(s.seq_len), "must exceed 2 x num_tokens_to_copy + 1 (MAD's assertion)");
      break;
    case Task::compression:
      if (l.keys_end < 1) fail("vocab_size", num(s.vocab_size), vocab + "the sequence (needs 1)");
      break;
    case Task::memorization:
      break;
  }
}

int64_t example_length(const Settings& s) {
  switch (s.task) {
    case Task::recall:
    case Task::noisy_recall:
      return s.multi_query ? s.seq_len - 1 : s.seq_len;
    case Task::memorization:
      return 2 * (s.seq_len / 2);
    default:
      return s.seq_len;
  }
}

std::vector<int32_t> memorization_map(int64_t vocab_size, uint64_t seed) {
  const int64_t keys = (vocab_size - 1) / 2;
  std::vector<int32_t> values(vocab_size - 1 - keys);
  std::iota(values.begin(), values.end(), static_cast<int32_t>(keys));
  uint64_t s = seed ^ 0x6D61702D6B76ull;  // "map-kv": a stream no split uses
  Rng rng(splitmix64(&s));
  for (size_t i = 0; i + 1 < values.size(); ++i) std::swap(values[i], values[i + rng.below(values.size() - i)]);
  values.resize(keys);
  return values;
}

Generator::Generator(const Settings& s) : s_(s) {
  validate(s_);
  lay_ = layout(s_);
  length_ = example_length(s_);
  if (s_.task == Task::memorization) map_ = memorization_map(s_.vocab_size, s_.seed);
}

void Generator::draw(bool training, uint64_t stream_seed, uint64_t index, int32_t* tokens, int32_t* targets) const {
  Rng rng(stream_seed, index);
  std::vector<int32_t> in, tg;
  switch (s_.task) {
    case Task::recall:
    case Task::noisy_recall:
      recall(rng, in, tg);
      return shift_out(training, in, tg, tokens, targets);
    case Task::fuzzy_recall:
      fuzzy(training, rng, in, tg);
      return shift_out(training, in, tg, tokens, targets);
    case Task::selective_copy:
      return selective_copy(rng, tokens, targets);
    case Task::compression:
      return compression(rng, tokens, targets);
    case Task::memorization:
      return memorization(rng, tokens, targets);
  }
}

// generate_in_context_recall_instance: seq_len/2 - 1 slots, each two noise
// tokens (with probability frac_noise, except one slot drawn to be a pair) or
// a key uniform over the keys with its value (drawn uniformly, values may
// repeat across keys, the first time the key appears); a repeated key's value
// is scored when multi_query. Then [copy prefix unless multi_query], a key
// uniform over the distinct keys shown, and its value, which is scored.
void Generator::recall(Rng& rng, std::vector<int32_t>& in, std::vector<int32_t>& tg) const {
  const int64_t pairs = s_.seq_len / 2, nk = lay_.keys_end, nv = lay_.values_end - nk;
  std::map<int32_t, int32_t> value_of;  // keys shown so far (a map: the vocabulary may be large)
  std::vector<int32_t> shown;
  do {  // all slots noise: MAD would fail on an empty choice; we draw again (MAD's distribution given success)
    in.clear(), tg.clear(), shown.clear(), value_of.clear();
    const int64_t not_noise = static_cast<int64_t>(rng.below(static_cast<uint64_t>(pairs)));
    for (int64_t i = 0; i + 1 < pairs; ++i) {
      if (i != not_noise && coin(rng, s_.frac_noise)) {
        for (int j = 0; j < 2; ++j)
          in.push_back(pick(rng, lay_.noise_begin, s_.noise_vocab_size)), tg.push_back(kIgnore);
        continue;
      }
      const int32_t k = pick(rng, 0, nk);
      const bool seen = value_of.count(k) > 0;
      if (!seen) value_of[k] = pick(rng, nk, nv), shown.push_back(k);
      const int32_t v = value_of[k];
      in.push_back(k), in.push_back(v);
      tg.push_back(kIgnore), tg.push_back(seen && s_.multi_query ? v : kIgnore);
    }
  } while (shown.empty());
  const int32_t probe = shown[rng.below(shown.size())];
  if (!s_.multi_query) in.push_back(lay_.special), tg.push_back(kIgnore);
  in.push_back(probe), tg.push_back(kIgnore);
  in.push_back(value_of[probe]), tg.push_back(value_of[probe]);
}

// generate_fuzzy_in_context_recall_instance: keys and values are motifs of
// 1..k (training; evaluation: exactly k) and 1..v distinct tokens. A probe
// pair is drawn first and inserted once the sequence reaches a position drawn
// uniformly from [0, seq_len - 2 x probe size) -- if the sequence still
// grows that far -- then pairs (or noise motifs) until seq_len - probe size -
// (k + v) tokens; then [copy prefix], the probe key and value (scored), all
// left-padded to seq_len + 1 and shifted.
void Generator::fuzzy(bool training, Rng& rng, std::vector<int32_t>& in, std::vector<int32_t>& tg) const {
  const int64_t K = s_.k_motif_size, Vm = s_.v_motif_size, L = s_.seq_len;
  const int64_t nk = lay_.keys_end, nv = lay_.values_end - nk;
  const int32_t pad = s_.multi_query ? lay_.special : lay_.special2;
  auto key_size = [&] { return training ? 1 + static_cast<int64_t>(rng.below(K)) : K; };
  const int64_t kp_size = key_size(), vp_size = 1 + static_cast<int64_t>(rng.below(Vm));
  const auto k_probe = motif(rng, 0, nk, kp_size), v_probe = motif(rng, nk, nv, vp_size);
  const int64_t probe_size = kp_size + vp_size;
  const auto probe_at = static_cast<int64_t>(rng.below(static_cast<uint64_t>(L - 2 * probe_size)));
  bool probe_added = false;
  std::map<std::vector<int32_t>, std::vector<int32_t>> value_of;  // keys shown so far
  auto append = [](std::vector<int32_t>& v, const std::vector<int32_t>& x) { v.insert(v.end(), x.begin(), x.end()); };
  while (static_cast<int64_t>(in.size()) < L - probe_size - (K + Vm)) {
    const int64_t k_size = key_size(), v_size = 1 + static_cast<int64_t>(rng.below(Vm));
    if (static_cast<int64_t>(in.size()) >= probe_at && !probe_added) {
      append(in, k_probe), append(in, v_probe);
      tg.insert(tg.end(), probe_size, kIgnore);  // never scored here, even if the key was shown before
      value_of[k_probe] = v_probe;
      probe_added = true;
      continue;
    }
    if (coin(rng, s_.frac_noise)) {
      for (int64_t j = 0; j < k_size + v_size; ++j) in.push_back(pick(rng, lay_.noise_begin, s_.noise_vocab_size));
      tg.insert(tg.end(), k_size + v_size, kIgnore);
      continue;
    }
    const auto k = motif(rng, 0, nk, k_size);
    const auto it = value_of.find(k);
    const bool seen = it != value_of.end();
    std::vector<int32_t> v;
    if (k == k_probe) {
      v = v_probe, probe_added = true;
    } else {
      v = seen ? it->second : motif(rng, nk, nv, v_size);
    }
    append(in, k), append(in, v);
    tg.insert(tg.end(), k_size, kIgnore);
    if (seen && s_.multi_query) {
      append(tg, v);
    } else {
      tg.insert(tg.end(), v.size(), kIgnore);
    }
    value_of[k] = v;
  }
  if (!s_.multi_query) in.push_back(lay_.special), tg.push_back(kIgnore);
  append(in, k_probe), append(in, v_probe);
  tg.insert(tg.end(), kp_size, kIgnore), append(tg, v_probe);
  const auto padding = static_cast<size_t>(L + 1) - in.size();  // >= 1: the loop stops at most k + v short
  in.insert(in.begin(), padding, pad);
  tg.insert(tg.begin(), padding, kIgnore);
}

// generate_selective_copying_instance: num_tokens_to_copy symbols uniform over
// [0, V-2); the seq_len - 2n - 1 blanks (V-2) are inserted before symbols
// chosen uniformly with replacement (numpy's randint(0, n): never after the
// last symbol); then the copy token (V-1) and n blanks, at which the symbols
// are the targets, in order.
void Generator::selective_copy(Rng& rng, int32_t* tokens, int32_t* targets) const {
  const int64_t n = s_.num_tokens_to_copy, L = s_.seq_len, blanks = L - 2 * n - 1;
  std::vector<int32_t> symbols(n);
  for (auto& t : symbols) t = pick(rng, 0, s_.vocab_size - 2);
  std::vector<int64_t> before(n, 0);
  for (int64_t b = 0; b < blanks; ++b) ++before[rng.below(static_cast<uint64_t>(n))];
  int64_t at = 0;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t b = 0; b < before[j]; ++b) tokens[at++] = lay_.special2;
    tokens[at++] = symbols[j];
  }
  tokens[at++] = lay_.special;
  for (int64_t j = 0; j < n; ++j) tokens[at++] = lay_.special2;
  std::fill_n(targets, L - n, kIgnore);
  std::copy(symbols.begin(), symbols.end(), targets + (L - n));
}

// generate_compression_instance: seq_len - 1 symbols uniform over the
// non-special tokens, each replaced by a noise token with probability
// frac_noise, then the compression token (V-1). MAD returns (inputs, inputs):
// every position's target is its own token, noise included.
void Generator::compression(Rng& rng, int32_t* tokens, int32_t* targets) const {
  const int64_t L = s_.seq_len;
  for (int64_t i = 0; i + 1 < L; ++i) tokens[i] = pick(rng, 0, lay_.keys_end);
  tokens[L - 1] = lay_.special;
  if (s_.frac_noise > 0)
    for (int64_t i = 0; i + 1 < L; ++i)
      if (coin(rng, s_.frac_noise)) tokens[i] = pick(rng, lay_.noise_begin, s_.noise_vocab_size);
  std::copy_n(tokens, L, targets);
}

// generate_memorization_instance: seq_len/2 pairs (key uniform over the map's
// keys, the insert token V-1); the target at the insert token is the key's
// value in the fixed map.
void Generator::memorization(Rng& rng, int32_t* tokens, int32_t* targets) const {
  for (int64_t p = 0; p < s_.seq_len / 2; ++p) {
    const int32_t k = pick(rng, 0, lay_.keys_end);
    tokens[2 * p] = k, tokens[2 * p + 1] = lay_.special;
    targets[2 * p] = kIgnore, targets[2 * p + 1] = map_[k];
  }
}

}  // namespace lra::tasks::mad
