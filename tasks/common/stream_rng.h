// The task generators' random stream: one per example (a Pathfinder image, an
// MQAR sequence), seeded from (seed, index), so an example never depends on
// which thread made it or on what came before. The draws map raw 64-bit words
// to numbers ourselves: std:: distributions differ between standard libraries
// and would make datasets non-portable. Do not change it: generated datasets
// and their fingerprints depend on it bit for bit.
#pragma once

#include <cstdint>

namespace lra::tasks {

inline uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// xoshiro256** (Blackman & Vigna): small state, fast, passes BigCrush.
class Rng {
 public:
  // One stream from one seed: the state is four successive splitmix64 outputs
  // (the ListOps generator's chunks).
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) w = splitmix64(&seed);
  }

  Rng(uint64_t seed, uint64_t index) {
    // Mix the two keys through splitmix so neighbouring indices get unrelated streams.
    uint64_t s = seed;
    uint64_t mixed = splitmix64(&s) ^ (index * 0xD1B54A32D192ED03ull);
    for (auto& w : s_) w = splitmix64(&mixed);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform on [0, 1) with 53 random bits (numpy's rand()).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform integer on [0, n), n >= 1, without modulo bias (Lemire).
  uint64_t below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Uniform integer on [low, high) (numpy's randint(low, high)).
  int randint(int low, int high) { return low + static_cast<int>(below(static_cast<uint64_t>(high - low))); }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace lra::tasks
