// A mixer written in Python, named FILE.py:CLASS wherever a plugin is named:
// the built-in Python plugin (plugins/python/) opens the class, and the host
// holds it as a LoadedPlugin like any other, named by the class, identified
// by the SHA-256 of its source files (docs/writing-a-python-mixer.md).
#pragma once

#include <string>

#include "plugins/loader.h"

namespace lra::host {

// Names a Python file: FILE.py:CLASS, or a malformed attempt at it (FILE.py
// alone, FILE.py: with no class), which load_python_mixer refuses as usage.
bool is_python_mixer_spec(const std::string& spec);

// The built-in Python plugin's own name: no mixer by itself (it refuses to
// build one without a class), so "every plugin" lists leave it out.
inline constexpr const char* kPythonPluginName = "python";

// Opens (once per file and class) the class as a mixer plugin. Throws
// lra::Error: usage for a malformed spec (no class, a class name that is not
// a Python identifier) or a missing file, plugin for
// anything the file or class does (syntax, imports, the contract).
const LoadedPlugin& load_python_mixer(const std::string& spec);

}  // namespace lra::host
