// model/summary_probe.h — the host's probe of where a mixer reads, which
// decides the summary position of its classifier (rules/summary_position.h).
#pragma once

#include "model/backbone.h"
#include "rules/summary_position.h"

namespace lra::host {

// Whether block 0's mixer, as `make` builds it for `spec`, reads ahead: its
// output at position 0 changes when positions 1.. change. One forward pass at
// the model's full length on random inputs, twice, in evaluation mode; tensors
// the mixer initialises to all zeros get small random values first, so a
// zero-initialised output projection cannot hide where the mixer reads. The
// global random stream is left as it was.
bool mixer_reads_ahead(const MixerFactory& make, const BackboneSpec& spec);

// The summary position a run of this mixer uses: "mean" for mean pooling, else
// "first" for a mixer that reads ahead (LRA's placement) and "after_last" for
// one that does not.
SummaryPosition choose_summary_position(const MixerFactory& make, const BackboneSpec& spec);

}  // namespace lra::host
