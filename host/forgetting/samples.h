// forgetting/samples.h — which lengths are tested, how each copy/LM sample is
// laid out and which of its tokens are scored (docs/forgetting.md, "What is
// measured" and "Which lengths"). Torch-free so it is cheap to test exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lra::host::forgetting {

// The reference tool's schedule: n values from 8 to max_length inclusive,
// evenly spaced ("linear") or geometrically ("log"), truncated to integers,
// duplicates removed, ascending. max_length >= 8 and n >= 1 (n = 1 tests
// max_length only). Bad values are usage errors naming the option.
std::vector<int64_t> test_lengths(int64_t max_length, int64_t n, const std::string& type);

struct SampleConfig {
  int64_t bos = 0, eos = 0;  // separator and end ids of the model's vocabulary
  uint64_t seed = 0;
};

// The two samples of repetition r at length L, each 2L + 3 tokens:
//   copy = [bos] S [bos] S [eos]        lm = [bos] I [bos] S [eos]
// S and I are L-token windows of `stream`: S from its first half, I from its
// second half, so they never overlap. Each (seed, L, r) has its own random
// offsets (unlike the reference tool's single random stream for all lengths,
// docs/deviations.md "Forgetting curve", Randomness), so
// a sample does not depend on which other lengths are tested.
struct SamplePair {
  std::vector<int64_t> copy, lm;
  int64_t s_offset = 0, i_offset = 0;  // where S and I start in the stream
};
SamplePair make_samples(const std::vector<int32_t>& stream, int64_t L, int64_t r, const SampleConfig& c);

// The shortest stream that can serve length L (both halves hold L tokens).
int64_t min_stream_tokens(int64_t L);

// Positions scored in a sample of length L: the last ceil(L/2) tokens of the
// second S, i.e. [first, end) with end = 2L + 2. The prediction for position
// p is the model's argmax at position p - 1 (teacher forcing).
struct ScoredRange {
  int64_t first = 0, end = 0;
};
ScoredRange scored_range(int64_t L);

// Fraction of scored positions whose prediction (argmax at p - 1, taken from
// `argmax`, one id per input position) equals the sample's token at p.
double score_sample(const int64_t* argmax, const std::vector<int64_t>& sample, int64_t L);

}  // namespace lra::host::forgetting
