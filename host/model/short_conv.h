// The host's gated short convolution for sequence tasks (manifest key
// model.short_conv): Zoology's BaseConv with a short kernel,
//   y = conv_k(u) * (W u + b) + u,
// conv_k depthwise and causal with bias. It is host code, not a plugin's:
// every mixer gets the same one in the same blocks (Zoology's Hybrid
// [conv, mixer] alternates them), so no mixer is denied what another got.
#pragma once

#include <memory>

#include "lra/mixer.h"

namespace lra::host {

// A mixer module for block `spec.layer_index`, kernel `kernel` (>= 1). It
// decodes token by token (its state: the last kernel - 1 inputs).
std::shared_ptr<lra::Mixer> make_gated_short_conv(const lra::MixerSpec& spec, int64_t kernel);

// Whether block `layer` of a model with model.short_conv = `kernel` is the
// host's convolution (even blocks) rather than the plugin's mixer.
inline bool is_short_conv_block(int64_t kernel, int64_t layer) { return kernel > 0 && layer % 2 == 0; }

}  // namespace lra::host
