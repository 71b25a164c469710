// A stand-in for one block's mixer inside the host's model, the mixer itself
// living in the mixer process (isolation/mixer_process.h). It holds the
// mixer's tensors as the host's own, under the same names (so model.pt
// loads, counts, optimizer groups and checkpoints work on them as on any
// mixer), sends them across before a forward call whenever one changed, and
// returns the output tensor it gets back. In grad mode a forward call is an
// autograd function: the process keeps the call's graph, and backward sends
// the output's gradient across and gets the input's and the trainable
// parameters' gradients back (run --isolate trains through it).
#pragma once

#include <map>
#include <string>

#include "isolation/mixer_process.h"
#include "model/backbone.h"

namespace lra::host {

// The MixerFactory of a model whose mixers live in `process`, built with the
// run's resolved mixer options (given as text; the process types them).
MixerFactory remote_mixer_factory(MixerProcess& process, const std::map<std::string, std::string>& options);

}  // namespace lra::host
