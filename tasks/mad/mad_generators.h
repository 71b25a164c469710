// MAD, Mechanistic Architecture Design (Poli, Thomas et al., ICML 2024): the
// six synthetic tasks of athms/mad-lab mad/data/instances.py, reimplemented
// from its rules on our own portable random stream. Torch-free.
//
// Every example is drawn from the stream (stream seed, index) and has the same
// length for a given setting (example_length). Targets follow MAD exactly:
// -100 where MAD ignores a position. The recall tasks are shifted as MAD
// shifts them: tokens are MAD's inputs[:-1], targets its inputs[1:] when
// training (every position scored) and its targets[1:] otherwise (only the
// values of keys seen before, and the final probe). Selective copying,
// compression and memorization have the same targets in every split, as in MAD.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stream_rng.h"

namespace lra::tasks::mad {

enum class Task { recall, fuzzy_recall, noisy_recall, selective_copy, compression, memorization };

// "mad_recall", ...: the plugin's name, used in error messages.
std::string task_name(Task task);
// Its title in messages: "in-context recall".
std::string task_title(Task task);

// MAD's MADConfig task knobs (mad/configs.py). Which ones a task reads:
// recall: vocab_size, seq_len, multi_query (and the noise pair, which MAD's
// in-context recall leaves at 0); noisy_recall: + noise_vocab_size, frac_noise;
// fuzzy_recall: + k_motif_size, v_motif_size; selective_copy: vocab_size,
// seq_len, num_tokens_to_copy; compression: vocab_size, seq_len, noise pair;
// memorization: vocab_size, seq_len, and seed for its fixed key->value map.
struct Settings {
  Task task = Task::recall;
  int64_t vocab_size = 16;
  int64_t seq_len = 128;
  int64_t noise_vocab_size = 0;
  double frac_noise = 0.0;
  int64_t k_motif_size = 1;
  int64_t v_motif_size = 1;
  int64_t num_tokens_to_copy = 0;
  bool multi_query = true;
  uint64_t seed = 12345;  // memorization: the map's seed (MAD's generate_kv_map seed = MADConfig.seed)
};

// MAD's baseline setting of a task (configs/tasks/<task>.yml over MADConfig's defaults).
Settings baseline(Task task);

// MAD's assertions and what its generator needs to terminate; throws
// lra::Error(rules) "<task> [data] <option>: <value> ..." naming the first
// option that fails.
void validate(const Settings& s);

// Tokens per example of this setting (MAD's instances all have one length:
// seq_len - 1 for multi-query recall, 2 * (seq_len / 2) for memorization,
// seq_len otherwise).
int64_t example_length(const Settings& s);

// Memorization's fixed map, value of key k at [k]: a uniformly random
// injection of the keys [0, (V-1)/2) into the values [(V-1)/2, V-1) (MAD's
// generate_kv_map over vocab_size - 1, zipping two shuffled lists), drawn
// from `seed` alone, so every split and example shares it.
std::vector<int32_t> memorization_map(int64_t vocab_size, uint64_t seed);

// Where the special tokens and sub-vocabularies of a setting lie (MAD's layout).
struct Layout {
  int64_t keys_end = 0;     // keys (recall) or symbols: [0, keys_end)
  int64_t values_end = 0;   // values: [keys_end, values_end)
  int64_t noise_begin = 0;  // noise tokens: [noise_begin, noise_begin + noise_vocab_size)
  int32_t special = -1;     // copy prefix / pad / copy / compression / insert token, -1 if none
  int32_t special2 = -1;    // fuzzy non-multi-query: its pad (V-2); selective copy: the blank (V-2)
};
Layout layout(const Settings& s);

class Generator {
 public:
  // Validates `s`; builds memorization's map once.
  explicit Generator(const Settings& s);

  // Writes example_length() tokens and targets of example `index` of the
  // stream `stream_seed`: a training example (MAD's is_training = True) or an
  // evaluation one.
  void draw(bool training, uint64_t stream_seed, uint64_t index, int32_t* tokens, int32_t* targets) const;

  const Settings& settings() const { return s_; }
  int64_t length() const { return length_; }
  const std::vector<int32_t>& map() const { return map_; }  // memorization only, else empty

 private:
  void recall(Rng& rng, std::vector<int32_t>& in, std::vector<int32_t>& tg) const;  // unshifted, as MAD builds it
  void fuzzy(bool training, Rng& rng, std::vector<int32_t>& in, std::vector<int32_t>& tg) const;
  void selective_copy(Rng& rng, int32_t* tokens, int32_t* targets) const;
  void compression(Rng& rng, int32_t* tokens, int32_t* targets) const;
  void memorization(Rng& rng, int32_t* tokens, int32_t* targets) const;

  Settings s_;
  Layout lay_;
  int64_t length_ = 0;
  std::vector<int32_t> map_;
};

}  // namespace lra::tasks::mad
