// The one way the host's models call a mixer's forward: marked as plugin code
// for the crash handler, and with exceptions and wrong shapes turned into a
// plugin error naming the plugin, the call and the step (common/plugin_calls.h).
#pragma once

#include <torch/types.h>

#include "lra/mixer.h"

namespace lra::host {

torch::Tensor call_mixer(lra::Mixer& mixer, const torch::Tensor& x, const torch::Tensor& mask);

// The same without the shape check (the conformance checks report shapes
// themselves): a rules or data error passes through, any other exception is
// a plugin fault in "forward".
torch::Tensor guarded_forward(lra::Mixer& mixer, const torch::Tensor& x, const torch::Tensor& mask);

}  // namespace lra::host
