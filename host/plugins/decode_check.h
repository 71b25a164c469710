// plugins/decode_check.h — the decoding promise checked where it is made.
//
// A causal mixer whose decodes() is true promises that decode_start and one
// decode_step per position give the outputs of its causal forward over the
// same tokens (lra/mixer.h). `bench --decode` times those steps and `inspect
// --check` reports on them, so both run this check first: a mixer whose steps
// ignore the context is refused (exit 3, naming the first position that
// differs), never published as "its state, N tokens/s".
//
// The check runs a fresh causal mixer in evaluation mode on random inputs of
// kDecodeParityPositions positions (fewer when max_len is shorter), in
// float64 where the mixer accepts it, else float32, and compares position by
// position with a tolerance relative to the outputs' scale. Then the state is
// checked to be all the steps keep: a copy of it at the middle, continued on
// other inputs with its steps called in turn with the original's, must give
// the forward of its own sequence (a mixer that keeps its context in the
// object or in a table keyed by its state fails; its state's measured size,
// plugins/state_size.h, would not be its memory).
#pragma once

#include <cstdint>
#include <string>

#include <c10/core/Device.h>

#include "lra/mixer.h"
#include "plugins/conformance.h"
#include "plugins/mixer_factory.h"

namespace lra::host {

inline constexpr int64_t kDecodeParityPositions = 24;
// Per position, the largest |step - forward| allowed, times max(1, max |forward|).
inline constexpr double kDecodeToleranceFloat64 = 1e-7;
inline constexpr double kDecodeToleranceFloat32 = 1e-4;

// LibTorch's generators are left as the check found them.
// The check named "decode": "passed", "failed" (detail names the first
// position that differs, by how much, and the precision), or "skipped" when
// the mixer does not decode (decodes() is false). `spec` is made causal here.
// Only for plugins whose vtable has the decoding entries (SDK 1.3 or later):
// the caller checks the descriptor's abi_minor. A fault in the plugin's code
// is lra::Error(plugin) as in any other check.
// `has_prefill`: the plugin is built for SDK 1.6 or later (its vtable has
// prefill); a mixer that then says prefills_in_parallel() has its prefill of
// the first half checked too — the prompt's outputs, and the steps after it
// (the state it leaves), against the causal forward.
ConformanceCheck check_decode_parity(const MixerMaker& make, lra::MixerSpec spec, const c10::Device& device,
                                     uint64_t seed, int64_t batch = 2, bool has_prefill = false);

// The same comparison on a mixer as it stands — a trained model's, on its
// device, in evaluation mode, created causal and decoding — in float32 over
// kDecodeParityPositions positions: "passed", or "failed" naming the first
// position that differs (`layer` names the block). Nothing of the mixer is
// converted; LibTorch's generators are left as they were.
ConformanceCheck check_decode_steps(lra::Mixer& mixer, int64_t d_model, int64_t layer, const c10::Device& device,
                                    uint64_t seed, int64_t batch = 2);

// Throws lra::Error(plugin) for a failed check, naming the plugin; the
// ConformanceCheck is returned for the report otherwise.
ConformanceCheck enforce_decode_parity(const std::string& plugin, const MixerMaker& make, const lra::MixerSpec& spec,
                                       const c10::Device& device, uint64_t seed, int64_t batch = 2,
                                       bool has_prefill = false);

}  // namespace lra::host
