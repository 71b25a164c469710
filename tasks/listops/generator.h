// The ListOps generator of the LRA reference (lra_benchmarks/data/listops.py),
// made deterministic by seed and independent of the thread count. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "expr.h"

namespace lra::listops {

struct GeneratorParams {
  int64_t min_length = 500;   // accept only min_length < length < max_length
  int64_t max_length = 2000;  // length = #leaves + 2 * #operators
  int64_t max_depth = 10;
  int64_t max_args = 10;
};

// Throws lra::Error(rules) for parameters that cannot produce any tree.
void validate(const GeneratorParams& p);

struct Example {
  std::string codes;  // the tree in prefix order, one byte per token id (kMin..kClose)
  int label = 0;
};

// `count` distinct trees. Work is cut into fixed chunks, each with its own RNG
// seeded from (seed, chunk); chunks are merged in order, so the result depends
// on (params, count, seed) only. Throws lra::Error(rules) when the parameters
// cannot yield `count` distinct trees in reasonable time.
std::vector<Example> generate(const GeneratorParams& p, int64_t count, uint64_t seed, int threads);

// The LRA release text of a tree: every left-nested pair wrapped in "( ... )",
// e.g. [MAX 2 9] -> "( ( ( [MAX 2 ) 9 ) ] )". Appends to *out.
void append_source(const std::string& codes, std::string* out);
std::string to_source(const std::string& codes);

struct SplitSizes {
  int64_t train = 0, val = 0, test = 0;
  int64_t total() const { return train + val + test; }
};
// The reference's 96% / 2% / 2%: val = test = total / 50, train = the rest.
SplitSizes default_split(int64_t total);

// Writes basic_{train,val,test}.tsv (header "Source<TAB>Target"; examples
// taken in order) and, if non-empty, params.txt. Everything is written into a
// temporary folder beside `dir` first and then renamed, so an interrupted run
// never leaves a partial file under its final name. Throws lra::Error(data).
void write_dataset(const std::string& dir, const std::vector<Example>& examples, const SplitSizes& sizes,
                   const std::string& params_txt = "");

}  // namespace lra::listops
