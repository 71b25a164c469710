// plugins/mixer_factory.h — building a mixer plugin's mixers: one per block,
// from its resolved options (plugins/mixer_options.h), with the plugin's
// faults named as its own (common/plugin_calls.h).
#pragma once

#include <functional>
#include <memory>

#include "lra/mixer.h"
#include "lra/options.h"
#include "plugins/loader.h"

namespace lra::host {

// Makes one block's mixer from its spec (the backbone's MixerFactory).
using MixerMaker = std::function<std::shared_ptr<lra::Mixer>(const lra::MixerSpec&)>;

// Creates the plugin's mixer for each block; a failing create becomes a
// plugin (or rules) error naming the plugin. `mixer` must outlive the maker.
MixerMaker plugin_mixer_factory(const LoadedPlugin& mixer, const lra::Params& options);

// A maker that also records every spec it was called with.
MixerMaker recording_specs(MixerMaker make, std::vector<lra::MixerSpec>* specs);

}  // namespace lra::host
