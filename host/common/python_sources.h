// common/python_sources.h — a Python mixer's plugin.sha256: one SHA-256 over
// the {relative path: sha256} map of its source files (the class's file and
// every module it imported from its own folder), as compact sorted JSON.
// Written where the class is opened (plugins/python_mixer.cpp) and recomputed
// by verify from the recorded map (results/result_fields.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/sha256.h"

namespace lra::host {

inline std::string python_sources_sha256(const nlohmann::json& files) { return sha256_hex(files.dump()); }

}  // namespace lra::host
