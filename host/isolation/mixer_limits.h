// Bounds of the messages between the verifier and the confined mixer process
// (isolation/mixer_wire.h), in one place for both sides.
#pragma once

#include <cstdint>

namespace lra::host {

// A request or answer: the largest is one forward call's input or output,
// [batch, length, d_model] floats (Path-X at evaluation batch 32: ~140 MB).
inline constexpr uint64_t kMaxRequestBytes = 8ull << 30;
inline constexpr uint64_t kMaxAnswerBytes = 8ull << 30;
// Tensors of one mixer, and elements of one tensor.
inline constexpr size_t kMaxMixerTensors = 4096;
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 31;
// The plugin's description (answer to hello): names, texts, options, a
// Python mixer's recorded sources.
inline constexpr size_t kMaxNameBytes = 4096;
inline constexpr size_t kMaxTextBytes = 1 << 16;
inline constexpr uint32_t kMaxPluginOptions = 256;
inline constexpr size_t kMaxSourceJsonBytes = 4 << 20;
// Forward calls whose graph the mixer process keeps for a backward call (run --isolate).
inline constexpr size_t kMaxPendingGraphs = 4096;

}  // namespace lra::host
