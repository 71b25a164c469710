// Which Python and torch the built-in Python plugin runs, as its own bridge
// reports them: a trivial class of the host's is opened (the bridge describes
// every class with the interpreter's versions). Used inside the re-evaluation
// sandbox, before the submitted class, so the report can say when the
// maintainer's torch is not the one a submission recorded (plugin.source.torch)
// even when the submitted class does not load at all.
#pragma once

#include <filesystem>
#include <string>

namespace lra::host {

struct PythonEnvironment {
  std::string python;  // platform.python_version()
  std::string torch;   // torch.__version__
};

// Writes the probe class into `dir` (created) and opens it. Throws lra::Error
// as load_python_mixer does (no Python plugin, no torch in the interpreter).
PythonEnvironment python_environment(const std::filesystem::path& dir);

}  // namespace lra::host
