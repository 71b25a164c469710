// bench/report_markdown.h — the Markdown tables of `lrahost bench`, after the
// LRA paper's Table 2.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_point.h"

namespace lra::host::bench {

// GitHub Markdown: a speed table (rows: plugins in input order; columns:
// lengths ascending; cells: steps/s and the speed-up against `transformer`
// at that length when it is ok there, "OOM", "error" or "-" when not
// measured), a peak-memory table in GB (10^9 bytes) with the ratio to
// `transformer`, then a line with device, dtype, batch, memory kind and MFU.
// Where a (plugin, length) occurs twice the first point counts.
std::string bench_markdown(const std::vector<BenchPoint>& points);

}  // namespace lra::host::bench
