// Shared by the MAD generator tests (test_mad_generators.cpp: fidelity;
// test_mad_rules.cpp: layouts, scored positions, the plugins' side).
#pragma once

#include <cstdint>
#include <vector>

#include "mad_generators.h"

namespace mad_test {

namespace mad = lra::tasks::mad;

constexpr int32_t kIgnore = -100;

struct Example {
  std::vector<int32_t> x, y;  // tokens, targets
};

inline Example draw(const mad::Generator& g, bool training, uint64_t stream, uint64_t index) {
  Example e{std::vector<int32_t>(g.length()), std::vector<int32_t>(g.length())};
  g.draw(training, stream, index, e.x.data(), e.y.data());
  return e;
}

inline mad::Settings setting(mad::Task t, int64_t vocab, int64_t len) {
  auto s = mad::baseline(t);
  s.vocab_size = vocab, s.seq_len = len;
  return s;
}

}  // namespace mad_test
