// Which code a re-evaluation runs for a run's mixer: the one rule, read by
// `lrahost submit` (what a bundle must carry) and by `verify --reevaluate`
// (what it runs). docs/rules.md#the-code-that-is-judged says why:
//   a Python mixer        its bundled sources (they are the code);
//   bundled C++ source    the plugin the verifier builds from it in the
//                         sandbox with its installed SDK; the submitted .so
//                         does not run;
//   a built-in mixer      the verifier's own build of it (lrahost's source);
//   a closed run's        refused: a closed entry's compiled mixer comes
//   compiled mixer        with its source, so that a reviewer reads the code
//   without source        that ran;
//   an open run's         the submitted .so, and the report says no source
//   without source        came with it.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lra::host {

enum class JudgedCode { python_sources, built_from_source, host_builtin, submitted_binary, refused };

struct JudgedCodeFacts {
  bool python = false;      // the result records plugin.source (a Python mixer)
  bool has_source = false;  // the bundle carries sources/<sha256>/ for its .so
  bool builtin = false;     // recorded_builtin_mixer names one
  bool closed = false;      // the division verify established
};

JudgedCode judged_code(const JudgedCodeFacts& f);

// The built-in mixer a result records, by its name and file name
// (plugin.file ".../lra_mixer_<plugin.name>.so", no plugin.source); nullopt
// for any other plugin. Whether this host has it is the verifier's question.
std::optional<std::string> recorded_builtin_mixer(const nlohmann::json& result);

// The reason a refused run gets (verify) and the hint submit gives.
std::string closed_binary_refusal(const std::string& plugin_name);

}  // namespace lra::host
