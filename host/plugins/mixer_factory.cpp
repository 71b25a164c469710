#include "plugins/mixer_factory.h"

#include "common/out_of_memory.h"
#include "common/plugin_calls.h"
#include "lra/status.h"

namespace lra::host {

MixerMaker plugin_mixer_factory(const LoadedPlugin& mixer, const lra::Params& options) {
  // Faults in the plugin's code from here on name it (common/plugin_calls.h).
  plugin_calls::set_plugin(mixer.descriptor.name);
  plugin_calls::install_crash_handler();
  return [&mixer, options](const lra::MixerSpec& ms) {
    std::shared_ptr<lra::Mixer> m;
    plugin_calls::Call call("create");
    if (auto st = mixer.mixer().create(ms, options, &m); !st.ok()) {
      // The SDK's boundary passes a std::bad_alloc or LibTorch's allocator
      // error on as an internal Status: out of memory (exit 7), not a plugin fault.
      if (st.kind == ErrorKind::internal && is_out_of_memory_message(st.message))
        plugin_calls::out_of_memory("create", st.message.substr(0, st.message.find('\n')));
      throw Error(st.kind == ErrorKind::internal ? ErrorKind::plugin : st.kind,
                  "plugin '" + mixer.descriptor.name + "' could not build its mixer: " + st.message);
    }
    return m;
  };
}

MixerMaker recording_specs(MixerMaker make, std::vector<lra::MixerSpec>* specs) {
  return [make = std::move(make), specs](const lra::MixerSpec& s) {
    specs->push_back(s);
    return make(s);
  };
}

}  // namespace lra::host
