// bench/report_json.h — the results part of bench.json (`lrahost bench`), and
// reading it back.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_point.h"

namespace lra::host::bench {

inline constexpr const char* kBenchSchema = "lrahost.bench/v1";

// One object per point, in order: {plugin, length, batch, device, dtype,
// status, error (only when status is not "ok"), steps_per_s,
// repetition_steps_per_s, tokens_per_s, peak_memory_bytes, peak_memory_kind,
// params, flops_per_step, mfu}; flops_per_step and mfu are null when unknown.
nlohmann::json bench_points_json(const std::vector<BenchPoint>& points);

// Reads the points of a bench.json document {"schema": "lrahost.bench/v1",
// "results": [...], ...}: every field above is required (the nullable ones
// may be null), status is ok/oom/error, a failed point needs a non-empty
// error, an ok one positive steps/s, and (plugin, length) is unique. Throws
// lra::Error(usage) naming `source` and the field, e.g.
// "bench.json: results[3].steps_per_s: missing".
std::vector<BenchPoint> bench_points_from_json(const nlohmann::json& doc, const std::string& source);

}  // namespace lra::host::bench
