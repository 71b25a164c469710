// The call between the host and the built-in Python plugin
// (plugins/python/, lra_mixer_python.so): open a class from a .py file as a
// mixer. Both sides are built in this tree by the same compiler against the
// same LibTorch, so the record may hold C++ types; a third-party plugin never
// sees it.
#pragma once

#include <cstdint>
#include <string>

#include "lra/mixer.h"
#include "lra/status.h"

namespace lra::host {

struct PythonMixerClass {
  std::string class_name;             // the Python class's name: the plugin's name in results
  uint32_t capabilities = 0;          // from the class's lra_capabilities
  std::string identity_json;          // {"files": {relative path: sha256}, "python": ..., "torch": ...}
  const lra::MixerPlugin* plugin = nullptr;  // options and create for this class; never freed
};

// lra::Status lra_python_mixer_open_v1(const char* file, const char* class_name, PythonMixerClass* out)
using PythonMixerOpenFn = lra::Status (*)(const char*, const char*, PythonMixerClass*);
inline constexpr const char* kPythonMixerOpenSymbol = "lra_python_mixer_open_v1";

}  // namespace lra::host
