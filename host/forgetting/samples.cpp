#include "forgetting/samples.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "lra/status.h"

namespace lra::host::forgetting {

namespace {

// SplitMix64 finaliser: decorrelates the (seed, L, r) triple into one seed.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // inclusive bounds
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

}  // namespace

std::vector<int64_t> test_lengths(int64_t max_length, int64_t n, const std::string& type) {
  constexpr int64_t kFirst = 8;  // the reference tool's first length
  if (max_length < kFirst)
    throw Error(ErrorKind::usage, "--max-len " + std::to_string(max_length) + ": expected at least " +
                                      std::to_string(kFirst) + " (the schedule starts at 8 tokens)");
  // Samples are 2L + 3 tokens and the model's position tables L long: bounded
  // before anything is allocated (as model.max_len, manifest/manifest.h).
  constexpr int64_t kMaxLength = int64_t{1} << 20;
  if (max_length > kMaxLength)
    throw Error(ErrorKind::usage, "--max-len " + std::to_string(max_length) + ": expected at most " +
                                      std::to_string(kMaxLength) + " (a length beyond what lrahost allocates)");
  if (n < 1) throw Error(ErrorKind::usage, "--granularity " + std::to_string(n) + ": expected at least 1");
  if (type != "linear" && type != "log")
    throw Error(ErrorKind::usage, "--granularity-type '" + type + "': expected linear or log");
  std::vector<int64_t> out;
  if (n == 1) return {max_length};
  for (int64_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / static_cast<double>(n - 1);
    double v = type == "linear" ? kFirst + t * static_cast<double>(max_length - kFirst)
                                : std::exp(std::log(double(kFirst)) + t * (std::log(double(max_length)) - std::log(double(kFirst))));
    // Guard the endpoints against rounding (exp(log(x)) may land just below x).
    int64_t L = i == n - 1 ? max_length : static_cast<int64_t>(v + 1e-9);
    out.push_back(std::clamp<int64_t>(L, kFirst, max_length));
  }
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t min_stream_tokens(int64_t L) { return 2 * L; }

SamplePair make_samples(const std::vector<int32_t>& stream, int64_t L, int64_t r, const SampleConfig& c) {
  const auto N = static_cast<int64_t>(stream.size());
  if (L < 1 || N < min_stream_tokens(L))
    throw Error(ErrorKind::data, "the evaluation text has " + std::to_string(N) + " tokens; length " +
                                     std::to_string(L) + " needs at least " + std::to_string(min_stream_tokens(L)) +
                                     " (S from the first half, I from the second): lower --max-len or use a larger corpus");
  std::mt19937_64 rng(mix(mix(mix(c.seed) ^ static_cast<uint64_t>(L)) ^ static_cast<uint64_t>(r)));
  const int64_t half = N / 2;
  SamplePair p;
  p.s_offset = uniform(rng, 0, half - L);
  p.i_offset = uniform(rng, half, N - L);
  auto layout = [&](int64_t first_offset) {
    std::vector<int64_t> v;
    v.reserve(static_cast<size_t>(2 * L + 3));
    v.push_back(c.bos);
    for (int64_t i = 0; i < L; ++i) v.push_back(stream[static_cast<size_t>(first_offset + i)]);
    v.push_back(c.bos);
    for (int64_t i = 0; i < L; ++i) v.push_back(stream[static_cast<size_t>(p.s_offset + i)]);
    v.push_back(c.eos);
    return v;
  };
  p.copy = layout(p.s_offset);
  p.lm = layout(p.i_offset);
  return p;
}

ScoredRange scored_range(int64_t L) {
  const int64_t scored = (L + 1) / 2;  // ceil(L / 2)
  return {2 * L + 2 - scored, 2 * L + 2};
}

double score_sample(const int64_t* argmax, const std::vector<int64_t>& sample, int64_t L) {
  const auto [first, end] = scored_range(L);
  int64_t hits = 0;
  for (int64_t p = first; p < end; ++p) hits += argmax[p - 1] == sample[static_cast<size_t>(p)] ? 1 : 0;
  return static_cast<double>(hits) / static_cast<double>(end - first);
}

}  // namespace lra::host::forgetting
