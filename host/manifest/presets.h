// manifest/presets.h — the manifests compiled into the host, and manifest files.
//
// Presets name embedded manifests: "official" -> lra-v1/<task>.toml (closed
// division), "smoke" -> smoke/<task>.toml (a CPU-sized run, open division).
// Under the self-pretraining protocol ("spt", docs/rules.md) they are
// lra-spt-v1/<task>.toml and smoke-spt/<task>.toml.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "manifest/embedded.h"
#include "manifest/manifest.h"

namespace lra::host {

// {"official", "smoke"}.
const std::vector<std::string>& preset_names();

// {"scratch", "spt"}: training from scratch (LRA as published), or
// self-pretraining on the task's own training inputs first.
const std::vector<std::string>& protocol_names();
// Throws ErrorKind::usage naming the valid protocols for any other name.
void check_protocol(const std::string& protocol);
// The released protocol family a run of `task` under --protocol is compared
// with: "lra-spt-v1" for spt, else the protocol of the task's suite
// ("lra-v1", "zoology-v1"; manifest/suites.h), "" for a task of none.
std::string release_protocol(const std::string& protocol, const std::string& task);

// The embedded file name of a preset's manifest for a task, e.g.
// ("listops", "official") -> "lra-v1/listops.toml". Throws ErrorKind::usage
// for an unknown preset; does not check that the file exists.
std::string preset_file(const std::string& task, const std::string& preset, const std::string& protocol = "scratch");

// Tasks that have an embedded manifest for `preset`, sorted.
std::vector<std::string> preset_tasks(const std::string& preset, const std::string& protocol = "scratch");

// Parses the embedded manifest (source "builtin:<file>"). ErrorKind::usage
// when the preset is unknown or the task has no manifest for it (the message
// lists the valid presets / the tasks that have one).
Manifest load_preset(const std::string& task, const std::string& preset, const std::string& protocol = "scratch");

// Reads and parses a manifest file (source = path as given). A missing path
// or a directory is ErrorKind::usage; a file that cannot be read is
// ErrorKind::rules; parse errors as parse_manifest.
Manifest load_manifest_file(const std::string& path);

// The embedded official manifest of a task (lra-v1/<task>.toml), or nullptr.
const EmbeddedFile* find_official(const std::string& task);

// True when `text` is byte for byte the official manifest of `task`.
bool is_official_text(const std::string& task, std::string_view text);

}  // namespace lra::host
