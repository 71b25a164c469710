// plugins/conformance.h — conformance checks: before any training, and with `lrahost
// inspect --check`, the host tests on small random inputs that a mixer keeps
// the promises its descriptor makes, instead of taking them on trust:
//
//   shape            the output is [B, L, D] for input [B, L, D]
//   finite           no output is NaN or infinite
//   deterministic    evaluation mode: the same input gives the same output
//                    (LibTorch's generator reseeded before each call, so
//                    seeded randomness is allowed, drifting state is not)
//   padding_mask     (declared) outputs at real positions do not change when
//                    the padded positions' inputs change
//   causal           (declared) outputs at positions <= t do not change when
//                    the inputs after t change (the causal spec, no mask, as
//                    the forgetting curve's LM runs it)
//   attention_probs  (declared) with recording on, last_attention() is
//                    [B, heads, L, L] and finite
//
// Each check runs on fresh mixers (one per layer spec) in evaluation mode
// without gradients; LibTorch's global generator is restored afterwards, so
// the checks do not change the run they guard.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lra/mixer.h"
#include "plugins/mixer_factory.h"

namespace lra::host {

struct ConformanceCheck {
  std::string name;
  std::string status = "skipped";  // "passed", "failed", "skipped" (capability not declared / not used)
  double difference = 0;           // the measured quantity (max abs difference, or count of bad values)
  double tolerance = 0;
  double seconds = 0;              // summed over the layers checked
  std::string detail;              // for a failure: what was measured where; for a skip: why
};

struct ConformanceOptions {
  int64_t batch = 2;  // examples per check input (1 from 4097 positions on, to bound memory)
  uint64_t seed = 0;
  // The model the checks guard runs the mixer causally (forget's LM): no
  // padding, the given specs are causal already.
  bool causal_model = false;
  // Spec for the causal check when the model is not causal (run, inspect):
  // rotary_base for mixers that declare LRA_CAP_ROTARY (as forget sets it).
  double rotary_base = 10000.0;
  // Where the mixers run (the run's device: a GPU-sized task checked on CPU could exhaust its memory).
  std::string device = "cpu";
};

// Runs every check on each spec (one per layer; identical specs are checked
// once). `caps` are the descriptor's capability bits. Exceptions and crashes
// in the plugin's forward are reported as plugin faults (phase "conformance
// check").
std::vector<ConformanceCheck> check_conformance(uint32_t caps, const MixerMaker& make,
                                                const std::vector<lra::MixerSpec>& specs,
                                                const ConformanceOptions& options);

// Throws lra::Error(plugin) naming the plugin, the first failed check and its
// measured difference; otherwise returns a one-line summary for the log.
std::string enforce_conformance(const std::string& plugin, const std::vector<ConformanceCheck>& checks);

}  // namespace lra::host
