#include "mqar_generator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "lra/status.h"
#include "stream_rng.h"

namespace lra::tasks::mqar {

std::string Cell::name() const {
  return "length " + std::to_string(length) + ", " + std::to_string(pairs) + " pairs";
}

std::vector<Cell> parse_grid(const std::string& text, const std::string& key) {
  std::vector<Cell> out;
  std::stringstream ss(text);
  std::string entry;
  while (std::getline(ss, entry, ',')) {
    Cell c;
    char x1 = 0, x2 = 0;
    std::istringstream es(entry);
    if (!(es >> c.length >> x1 >> c.pairs >> x2 >> c.examples) || x1 != 'x' || x2 != 'x' || !(es >> std::ws).eof() ||
        c.length < 1 || c.pairs < 1 || c.examples < 1)
      throw Error(ErrorKind::rules, "mqar [data] " + key + ": entry '" + entry +
                                        "' is not LENGTHxPAIRSxEXAMPLES with three positive integers (e.g. 64x4x1000)");
    out.push_back(c);
  }
  if (out.empty()) throw Error(ErrorKind::rules, "mqar [data] " + key + ": no cells (e.g. \"64x4x1000,128x8x1000\")");
  return out;
}

std::string grid_text(const std::vector<Cell>& cells) {
  std::string s;
  for (const auto& c : cells)
    s += (s.empty() ? "" : ",") + std::to_string(c.length) + "x" + std::to_string(c.pairs) + "x" +
         std::to_string(c.examples);
  return s;
}

void validate(const Settings& s, const Cell& c, const std::string& key) {
  auto fail = [&](const std::string& why) {
    throw Error(ErrorKind::rules, "mqar [data] " + key + ": cell " + c.name() + ": " + why);
  };
  if (c.length % 2 != 0) fail("the length must be even (Zoology's assertion)");
  if (s.vocab_size <= c.length)
    fail("vocab_size " + std::to_string(s.vocab_size) + " must exceed the length (Zoology's assertion)");
  if (4 * c.pairs > c.length)
    fail("4 x pairs must fit in the length (the pairs, then room for a query per pair; Zoology's assertion)");
  if (c.pairs > s.vocab_size / 2 - 1)
    fail("more pairs than the " + std::to_string(s.vocab_size / 2 - 1) + " keys of vocab_size " +
         std::to_string(s.vocab_size));
}

std::vector<double> gap_weights(int64_t space, double a) {
  std::vector<double> w(space);
  for (int64_t g = 0; g < space; ++g) w[g] = a * std::pow(static_cast<double>(g + 1), a - 1.0);
  return w;
}

namespace {

// `count` distinct integers from [low, high), in the order drawn (a partial
// Fisher-Yates over the range: numpy's choice without replacement draws the
// same distribution).
std::vector<int32_t> distinct(Rng& rng, int64_t low, int64_t high, int64_t count) {
  std::vector<int32_t> pool(high - low);
  std::iota(pool.begin(), pool.end(), static_cast<int32_t>(low));
  for (int64_t i = 0; i < count; ++i) std::swap(pool[i], pool[i + rng.below(pool.size() - i)]);
  pool.resize(count);
  return pool;
}

}  // namespace

void generate_example(const Settings& s, int64_t L, int64_t P, uint64_t seed, uint64_t index, int32_t* tokens,
                      int32_t* targets) {
  Rng rng(seed, index);
  const int64_t half = s.vocab_size / 2;
  const auto keys = distinct(rng, 1, half, P);
  const auto values = distinct(rng, half, s.vocab_size, P);
  std::fill_n(tokens, L, 0);
  std::fill_n(targets, L, -100);
  for (int64_t j = 0; j < P; ++j) {
    tokens[2 * j] = keys[j];
    tokens[2 * j + 1] = values[j];
  }
  // P gaps without replacement, weighted: Efraimidis-Spirakis keys log(u)/w,
  // the P largest — the distribution of successive weighted draws (numpy's
  // choice(replace=False, p=...)).
  const int64_t space = (L - 2 * P) / 2;
  const auto w = gap_weights(space, s.power_a);
  std::vector<std::pair<double, int64_t>> keyed(space);
  for (int64_t g = 0; g < space; ++g) {
    double u = rng.uniform();
    while (u <= 0.0) u = rng.uniform();
    keyed[g] = {std::log(u) / w[g], g};
  }
  std::partial_sort(keyed.begin(), keyed.begin() + P, keyed.end(),
                    [](const auto& x, const auto& y) { return x.first > y.first || (x.first == y.first && x.second < y.second); });
  for (int64_t j = 0; j < P; ++j) {
    const int64_t at = 2 * P + 2 * keyed[j].second;
    tokens[at] = keys[j];
    targets[at] = values[j];
  }
  if (s.random_non_queries)
    for (int64_t t = 2 * P; t < L; ++t)
      if (tokens[t] == 0) tokens[t] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(s.vocab_size)));
}

}  // namespace lra::tasks::mqar
