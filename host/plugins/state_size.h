// plugins/state_size.h — the bytes a model's mixers keep per sequence when they
// decode token by token (lra/mixer.h, SDK 1.3), measured by the host, never
// declared: the recall suites plot accuracy against it (docs/suites.md), and
// `bench --decode` reports the same quantity.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "lra/mixer.h"
#include "lra/task.h"
#include "model/backbone.h"

namespace lra::host {

// Bytes of the tensors of every layer's decoding state (numel x element size).
int64_t state_bytes(const std::vector<std::vector<torch::Tensor>>& states);

struct StateSize {
  int64_t length = 0;  // tokens decoded
  int64_t bytes = 0;   // the most the state held at any of them, per sequence
};

struct StateMeasurement {
  std::vector<StateSize> sizes;  // empty when not measured
  std::string why_not;           // then: why
};

// The state of `mixers` (one model's blocks, in order, created causal, every
// one decoding: the caller checks decodes()) over each of `lengths` tokens: a
// fresh state per length, one sequence of random inputs [1, d_model] passed
// through the layers' decode_step, in evaluation mode without gradients
// (training mode and the CPU generator restored afterwards). The size is the
// state at its fullest over the steps: a block-local cache empties and
// refills, and its capacity is what a sequence needs. Not measured when some
// mixer's steps differ from its own causal forward (check_decode_steps,
// plugins/decode_check.h): a state that does not reproduce the forward is not
// the model's state.
StateMeasurement measure_state_size(const std::vector<std::shared_ptr<lra::Mixer>>& mixers,
                                    const std::vector<int64_t>& lengths, int64_t d_model, const torch::Device& device,
                                    uint64_t seed);

// The lengths a sequence task's state is measured at: the distinct lengths of
// the test examples within model.max_len (at most 8, evenly spread, the
// longest kept).
std::vector<int64_t> state_lengths(const lra::Split& test, int64_t max_len);

// A model's decoding state at each of `lengths`, as result.json's state_size
// member; {"measured": false, "why": ...} when a mixer does not decode. The
// plugin's mixers decode only when built for SDK 1.3 or later (`abi_minor`)
// and their decodes() says so (in a mixer process too, where the state
// crosses with every step: isolation/remote_mixer.h); the host's short
// convolutions always do. A run and a re-evaluation measure it alike.
nlohmann::json model_state_size(Classifier& model, const ModelConfig& m, const std::string& mixer_name,
                                uint32_t abi_minor, const std::vector<int64_t>& lengths, const torch::Device& device,
                                uint64_t seed);

// result.json's state_size member: {"measured": true, "method": ..., "per_length": [{length, bytes}]},
// or {"measured": false, "why": ...}.
nlohmann::json state_size_json(const StateMeasurement& m);

}  // namespace lra::host
