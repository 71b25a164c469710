// forgetting/report_json.h — the curve part of forgetting.json and reading
// such a file back (for plots and comparisons of finished runs).
//
// The writer of forgetting.json merges curve_summary_json(curve) with
// {"schema": "lrahost.forgetting/v1", "label", "configuration": {"train_length",
// ...}, "corpus", "model", "host"}. Per-length fields keep the reference
// tool's names (reference forgetting-curve.md §7).
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "forgetting/curve.h"

namespace lra::host::forgetting {

inline constexpr const char* kForgettingSchema = "lrahost.forgetting/v1";

// One object per point, in order: {length, copy_mean, copy_std, lm_mean,
// lm_std, copy_accs, lm_accs, p_value} for an ok point, {length, error} for a
// failed one.
nlohmann::json points_to_json(const Curve& curve);

// {fine_length, fine_length_censored, coarse_length, coarse_length_censored,
// complete, points}.
nlohmann::json curve_summary_json(const Curve& curve);

// Reads a forgetting.json document: label, configuration.train_length
// (optional, 0 when absent) and the points; means, standard deviations,
// p-values, memory lengths and `complete` are recomputed from the accuracies
// (finalize), so the stored summary fields are not trusted. Throws
// lra::Error(usage) naming `source`, the field and the value, e.g.
// "a.json: points[3].copy_mean: missing".
Curve curve_from_json(const nlohmann::json& doc, const std::string& source);

// Reads and parses `file`, then curve_from_json; every error names the file.
Curve load_curve_file(const std::filesystem::path& file);

}  // namespace lra::host::forgetting
