// The one way the host's models call a mixer's forward: marked as plugin code
// for the crash handler, and with exceptions and wrong shapes turned into a
// plugin error naming the plugin, the call and the step (common/plugin_calls.h).
#pragma once

#include <torch/types.h>

#include "lra/mixer.h"

namespace lra::host {

torch::Tensor call_mixer(lra::Mixer& mixer, const torch::Tensor& x, const torch::Tensor& mask);

}  // namespace lra::host
