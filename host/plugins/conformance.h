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
// the checks do not change the run they guard. The causal check also runs on
// the live model during forget's training and measurement (LiveCausalCheck
// below), since a mixer may behave only while it is being checked.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include "lra/mixer.h"
#include "lra/status.h"
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

// The capability bit whose declaration a check tests (LRA_CAP_PADDING_MASK
// for "padding_mask"); 0 for the checks every mixer gets (shape, finite,
// deterministic) and for unknown names.
uint32_t capability_checked_by(const std::string& check);

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

// ---- Live checks (issue 31) ----
// The checks above run once, before training: a mixer can keep its promises
// then and break them later (after N calls, on longer inputs than the check
// used). So the 'causal' check also runs on the live model, on a random sample
// of its calls (forget's training steps and measured batches), at the level
// of the whole model: outputs at positions <= t must not change when the
// tokens after t change. What passes it is causal on the inputs sampled, not
// on every input (docs/forgetting.md#live-conformance-checks).

// A failed conformance check (exit 3). Its own type, so that code which
// records ordinary failures and goes on (the forgetting measurement records a
// failed length) lets this one end the command.
class ConformanceFailure : public lra::Error {
 public:
  explicit ConformanceFailure(std::string message) : Error(ErrorKind::plugin, std::move(message)) {}
};

// LibTorch's generators (CPU and every GPU's) as they were at construction;
// rewind() puts them back, so two forwards see the same draws and a check
// leaves the run it guards unchanged.
class GeneratorStates {
 public:
  GeneratorStates();
  void rewind() const;

 private:
  static std::vector<at::Generator> generators();
  std::vector<at::Tensor> states_;
};

// Token ids [B, T] (int64, on the model's device) -> outputs per position [B, T, ...].
using TokenModel = std::function<at::Tensor(const at::Tensor& ids)>;

struct LiveCausalOptions {
  std::string plugin;                          // named in the failure
  std::string phase;                           // "during training", "during the measurement"
  double probability = 0;                      // chance that one call is checked
  // Of max(1, max |output|): float32 reorders reductions (an FFT convolution
  // mixes every position's rounding), bfloat16 autocast rounds far more;
  // reading a later token changes the outputs by their own scale.
  double relative_tolerance = 1e-4;
  // Replacement tokens are windows of this text (real data, so a perturbed
  // input looks like any other); null or too short: uniform bytes.
  const std::vector<int32_t>* text = nullptr;
};

struct LiveCausalStats {
  int64_t calls = 0, checks = 0;  // calls seen by due(), checks run
  double seconds = 0;             // spent in the checks' extra forwards and comparisons
  double max_ratio = 0;           // largest measured difference / tolerance (< 1 when passed)
};

class LiveCausalCheck {
 public:
  // The schedule and the perturbations come from a generator seeded from a
  // secret (std::random_device), not from the run's seed, which the plugin
  // is given: it cannot predict which calls are checked. The checks change
  // nothing in the run, so its results stay reproducible.
  explicit LiveCausalCheck(LiveCausalOptions o);
  // Whether this call is checked (one draw per call).
  bool due();
  // Runs `model` on `ids` with each example's tokens after a random position
  // t_i replaced, then on `ids` itself, LibTorch's generators rewound before
  // each; compares the outputs at positions <= t_i and throws
  // ConformanceFailure naming `where` ("at step 12") on a difference beyond
  // the tolerance. Returns the outputs for `ids` (the second call: a mixer
  // that remembers its last input cannot tell the check from the real call by
  // its prefix). The caller chooses the mode (evaluation) and grad mode.
  at::Tensor run(const TokenModel& model, const at::Tensor& ids, const std::string& where);
  const LiveCausalStats& stats() const { return stats_; }
  const LiveCausalOptions& options() const { return o_; }

 private:
  LiveCausalOptions o_;
  std::mt19937_64 rng_;
  LiveCausalStats stats_;
};

}  // namespace lra::host
