// bench/bench_report.h — the reports of `lrahost bench`: the results part of
// bench.json and reading it back, Markdown tables after the LRA paper's
// Table 2, and SVG charts (speed and memory against length; the paper's
// Figure 3 when accuracies are given).
#pragma once

#include <map>
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

// GitHub Markdown: a speed table (rows: plugins in input order; columns:
// lengths ascending; cells: steps/s and the speed-up against `transformer`
// at that length when it is ok there, "OOM", "error" or "-" when not
// measured), a peak-memory table in GB (10^9 bytes) with the ratio to
// `transformer`, then a line with device, dtype, batch, memory kind and MFU.
// Where a (plugin, length) occurs twice the first point counts.
std::string bench_markdown(const std::vector<BenchPoint>& points);

// Hand-written SVG 1.1. Without accuracies: "training steps/s" and "peak
// memory (GB)" against length side by side, one colour per plugin, failed
// points as crosses at the top of the panels. With accuracies (plugin ->
// average LRA accuracy in %): instead the paper's Figure 3 — steps/s at each
// plugin's longest ok length against accuracy, bubble area proportional to
// peak memory there; plugins lacking an accuracy or an ok point are listed
// in a note.
std::string bench_svg(const std::vector<BenchPoint>& points,
                      const std::map<std::string, double>& accuracy = {});

}  // namespace lra::host::bench
