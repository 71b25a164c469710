// Harness: a bench.json as `lrahost bench --report` and `leaderboard --bench`
// read it: JSON through the host's one JSON input (depth limit; an unusable
// file is a usage error there), the points, then the Markdown and SVG reports
// drawn from them.
#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "common/json_input.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json doc;
  try {
    doc = lra::host::parse_json_input(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const lra::host::JsonInputError&) {
    return 0;  // bench --report, leaderboard --bench: "not JSON" (usage error)
  }
  LRA_FUZZ_EXPECT_ERRORS({
    const auto points = lra::host::bench::bench_points_from_json(doc, "bench.json");
    (void)lra::host::bench::bench_markdown(points);
    (void)lra::host::bench::bench_svg(points);
    std::map<std::string, double> accuracy;
    for (const auto& p : points) accuracy[p.plugin] = 50.0;
    (void)lra::host::bench::bench_svg(points, accuracy);
    (void)lra::host::bench::bench_points_json(points).dump();
  })
  return 0;
}
