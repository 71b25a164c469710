// Harness: a curve file as `lrahost forget --compare` reads it — our
// forgetting.json (an object) or the reference tool's result file (a list),
// chosen by the document's shape (load_curve_file), then the comparison plot
// drawn from it.
#include "forgetting/plot_svg.h"
#include "forgetting/report_json.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = lra_fuzz::scratch() / "curve.json";
  lra_fuzz::write_file(file, data, size);
  LRA_FUZZ_EXPECT_ERRORS({
    const auto loaded = lra::host::forgetting::load_curve_file(file);
    lra::host::forgetting::PlotOptions options;
    (void)lra::host::forgetting::compare_svg({loaded.curve, loaded.curve}, options);
    options.log_x = true;
    (void)lra::host::forgetting::compare_svg({loaded.curve}, options);
  })
  return 0;
}
