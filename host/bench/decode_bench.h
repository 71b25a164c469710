// bench/decode_bench.h — `lrahost bench --decode`: how fast each mixer
// generates, one token at a time after a context of each length, and what it
// keeps per sequence to do so. The shape is the causal LM's (the forgetting
// manifest: layers, width, heads, rotary positions where the mixer takes
// them); one token goes through every layer's mixer. A mixer that decodes
// (lra/mixer.h, ABI 1.3) steps through its own state; any other causal mixer
// is measured by recomputing its causal forward over the whole context for
// every token, and marked so. decode.json and decode.md in --out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "bench/bench_run.h"

namespace lra::host::bench {

struct DecodePoint {
  std::string plugin;
  int64_t context = 0;          // tokens already decoded before the timed ones
  std::string mode;             // "state" | "recomputed" | "not causal" | "oom" | "error"
  double tokens_per_s = 0;      // batch x timed tokens / their wall time
  double ms_per_token = 0;      // one token through every layer, the whole batch at once
  int64_t bytes_per_sequence = 0;  // what persists between tokens, per sequence (below)
  double prefill_s = 0;         // "state": the context through every layer first
  std::string prefill_mode;     // "parallel" (every layer's SDK 1.6 prefill) or "token by token"
  int64_t peak_memory_bytes = 0;
  std::string error;
};

// Every plugin is resolved first; a plugin that fails at one context is a point, not an error.
BenchOutcome run_decode_bench(const BenchArgs& a, spdlog::logger& log);

}  // namespace lra::host::bench
