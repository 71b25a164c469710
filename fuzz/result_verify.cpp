// Harness: a result.json as `lrahost verify` and `lrahost leaderboard` read
// it — the file's own checks (schema, digest, division, budget) against the
// release registry, the submission checks over it as a one-file set, then the
// leaderboard built from it and its three pages.
#include "runs/official_registry.h"
#include "fuzz_util.h"
#include "leaderboard/board.h"
#include "leaderboard/site.h"
#include "results/submission.h"
#include "results/verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lra::host;
  const auto file = lra_fuzz::scratch() / "result.json";
  lra_fuzz::write_file(file, data, size);
  LRA_FUZZ_EXPECT_ERRORS({
    const VerifyReport r = verify_result_file(file, registry_official);
    // No command prints this object yet; a consumer must replace invalid UTF-8 (reasons quote the file).
    (void)to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const auto files = read_submission({file}, registry_official);
    (void)verify_submission(files, registry_trial_seeds);
  })
  LRA_FUZZ_EXPECT_ERRORS({
    const Leaderboard board = build_leaderboard({file}, {}, registry_official, registry_trial_seeds);
    (void)leaderboard_html(board);
    (void)leaderboard_markdown(board);
    (void)leaderboard_json(board).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // as cmd_leaderboard
  })
  return 0;
}
