// forgetting/report_json.h — the curve part of forgetting.json, and reading
// curves back (for plots and comparisons): our forgetting.json, or the
// reference tool's own result file, draw.py's JSON list (docs/forgetting.md,
// "Comparing curves").
//
// The writer of forgetting.json merges curve_summary_json(curve) with
// {"schema": "lrahost.forgetting/v1", "label", "configuration": {"train_length",
// ...}, "corpus", "model", "host"}. Per-length fields keep the reference
// tool's names (docs/forgetting.md, "forgetting.json").
//
// Every reading error is lra::Error(data) (exit code 5) of the form
// "<source>: <field>: <what>; <what to do>", e.g.
// "a.json: points[3].copy_mean: missing; ..." or "Llama.json: [3].copy_mean: ...".
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "forgetting/curve.h"

namespace lra::host::forgetting {

inline constexpr const char* kForgettingSchema = "lrahost.forgetting/v1";

// One object per point, in order: {length, copy_mean, copy_std, lm_mean,
// lm_std, copy_accs, lm_accs, p_value} for an ok point, {length, error} for a
// failed one.
nlohmann::json points_to_json(const Curve& curve);

// {fine_length, fine_length_censored, coarse_length, coarse_length_censored,
// fine_length_prefix, fine_length_prefix_censored, coarse_length_prefix,
// coarse_length_prefix_censored, complete, points}.
nlohmann::json curve_summary_json(const Curve& curve);

// Reads a forgetting.json document: label, configuration.train_length
// (optional, 0 when absent) and the points; means, standard deviations,
// p-values, memory lengths and `complete` are recomputed from the accuracies
// (finalize), so the stored summary fields are not trusted.
Curve curve_from_json(const nlohmann::json& doc, const std::string& source);

// Reads the reference tool's result file (draw.py's `<title>.json`): a
// non-empty list, one object per tested length, ascending. Required: integer
// `length` > 0, `copy_mean` and `lm_mean` in [0, 1]. Optional, checked when
// present: `copy_accs` and `lm_accs` (both or neither; equal-length non-empty
// lists of accuracies in [0, 1], whose mean must match the stored one; the
// statistics are then recomputed from them), `copy_std`, `lm_std` (>= 0),
// `p_value` (in [0, 1]), `normality` (an object of booleans). Other fields are
// ignored. The file names no model or training length: train_length = 0.
Curve curve_from_reference_json(const nlohmann::json& doc, const std::string& source, const std::string& label);

// Differences between the memory lengths a forgetting.json stores and those
// recomputed in `curve` (one sentence each, naming `source`); empty when they
// agree. Files written before the Table 3 rule store the prefix rule's values
// as fine_length/coarse_length: the sentence then says so.
std::vector<std::string> stored_length_notes(const nlohmann::json& doc, const Curve& curve,
                                             const std::string& source);

struct LoadedCurve {
  Curve curve;
  std::string format;              // "forgetting.json" or "reference tool"
  std::vector<std::string> notes;  // stored_length_notes, for forgetting.json
};

// Reads and parses `file`, and picks the reader by the document's shape: a
// list is the reference tool's file (label = the file name's stem), an
// object our forgetting.json. Python's NaN, Infinity and -Infinity (which
// json.dump writes, though JSON has no such numbers) are reported at the field
// holding them. Every error names the file.
LoadedCurve load_curve_file(const std::filesystem::path& file);

}  // namespace lra::host::forgetting
