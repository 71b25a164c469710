// Multi-query associative recall (Zoology: Arora, Eyuboglu et al., ICLR 2024):
// the distribution of HazyResearch/zoology's zoology/data/multiquery_ar.py,
// reimplemented from its facts on our own portable random stream. Torch-free.
//
// An example of length L with P pairs: P key/value pairs first (keys distinct
// from [1, V/2), values distinct from [V/2, V)), then each key once more as a
// query, at even offsets 2*g into the rest, the gaps g drawn without
// replacement with power-law weights a * (g+1)^(a-1). The target at a query
// is its key's value; every other position is unscored. Fillers are 0, or
// with random_non_queries uniform over [0, V).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lra::tasks::mqar {

struct Settings {
  int64_t vocab_size = 8192;  // Zoology's VOCAB_SIZE
  double power_a = 0.01;      // MQARConfig.power_a
  bool random_non_queries = true;  // MQARConfig.random_non_queries
};

// One (length, pairs) setting and how many examples a split draws from it.
struct Cell {
  int64_t length = 0, pairs = 0, examples = 0;
  std::string name() const;  // "length 256, 64 pairs"
};

// "64x4x100000,128x8x20000": length x pairs x examples, comma-separated.
// Throws lra::Error(rules) naming `key` and the bad entry.
std::vector<Cell> parse_grid(const std::string& text, const std::string& key);
std::string grid_text(const std::vector<Cell>& cells);

// Zoology's preconditions (even length, V > L, 4P <= L, V/2 - 1 >= P keys);
// throws lra::Error(rules) naming the cell and the one that fails.
void validate(const Settings& s, const Cell& c, const std::string& key);

// Writes one example of `length` tokens and targets (-100 where unscored),
// from the random stream (seed, index).
void generate_example(const Settings& s, int64_t length, int64_t pairs, uint64_t seed, uint64_t index, int32_t* tokens,
                      int32_t* targets);

// The gap weights Zoology draws queries with: a * (g+1)^(a-1), g = 0..space-1 (unnormalised).
std::vector<double> gap_weights(int64_t space, double power_a);

}  // namespace lra::tasks::mqar
