// `lrahost verify --reevaluate BUNDLE`: checks a submission from its weights,
// not its word, with the judged code in a process of its own. For every run:
//   1. the result file passes verify (digest, division, signature, model hash);
//   2. the model.pt and plugin .so (a Python mixer: its source folder,
//      checked file by file when the bundle was unpacked) are the ones the
//      result names (SHA-256); the code that runs is chosen by
//      reevaluation/judged_code.h: a compiled mixer's bundled source is
//      built in the sandbox and what it built runs, a built-in mixer is the
//      verifier's own, a closed run's compiled mixer without source is refused;
//   3. the verifier builds the model itself from the recorded configuration
//      and seed, every block's mixer held in a confined mixer process that
//      sees only its own tensors and the mixer inputs
//      (reevaluation/isolated_evaluation.h); it probes the summary position,
//      recomputes the optimizer groups, counts model.pt against its own fresh
//      initialisation and predicts the official test split: the accuracy
//      must equal the recorded one on the same device and precision, and lie
//      within `tolerance` otherwise (then the verifier's own number is the one
//      published);
//   4. for a generated task, the model also predicts a fresh private test
//      set drawn from a secret seed, interleaved in a secret order; a public
//      accuracy significantly above the private one (one-sided
//      two-proportion z-test, p < `significance`) means the model saw the
//      public test split;
//   5. with freshly initialised weights the same model must not beat the
//      majority class (predictions that do not depend on the weights).
// Each run's outcome is written beside its result.json as reevaluation.json,
// bound to the result's digest, for the leaderboard to show. Everything is
// written beside --out first and moved there at the end.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/ed25519.h"
#include "isolation/sandbox.h"
#include "results/verify.h"

namespace lra::host {

inline constexpr const char* kReevaluationFileName = "reevaluation.json";
inline constexpr const char* kReevaluationSchema = "lrahost.reevaluation/v1";

struct ReevaluateOptions {
  std::filesystem::path bundle;
  std::filesystem::path out;                // where the bundle is unpacked and reports written
  std::optional<std::string> data_dir;      // the official data (generated tasks: generated if absent)
  std::string device = "cpu";
  int threads = 1;
  std::optional<uint64_t> private_seed;     // nullopt: drawn from the system's random source, never written
  int64_t private_examples = 0;             // 0: as many as the public test split
  SandboxLimits limits;                     // timeout_seconds: one run's mixer process, all of it
  int call_timeout_seconds = 600;           // one request to the mixer process
  int64_t bundle_timeout_seconds = 6 * 3600;  // the whole bundle; runs after it are not re-evaluated
  bool sandbox = true;                      // false: run the plugin unconfined (explicit opt-out)
  // A compiled mixer's bundled source is built against this SDK prefix
  // (reevaluation/source_build.h); nullopt: the installed lrahost's own.
  std::optional<std::filesystem::path> sdk;
  int build_timeout_seconds = 1800;         // one source build, configure and compile
  double tolerance = 0.005;                 // accuracy, when device or precision differ from the run's
  double significance = 0.001;              // of the public-above-private test
  // --trusted-keys: key id -> public key; non-empty = every result must be signed by one of them.
  std::map<std::string, std::string> trusted_keys;
  std::filesystem::path trusted_keys_dir;
  // --sign-key: reevaluation.json is signed with it (reevaluation/reevaluation_signature.h); null: unsigned.
  std::shared_ptr<const Ed25519PrivateKey> sign_key;
};

struct RunReevaluation {
  std::string run;                  // the run's folder name in the bundle
  std::filesystem::path result_file;
  bool valid = false;
  std::vector<std::string> reasons;
  std::vector<std::string> facts;   // what was measured, for the report lines
  nlohmann::json report;            // what reevaluation.json holds
};

// Throws lra::Error for a bundle that cannot be read (data) or an --out that
// cannot be used (usage/storage); a run that fails a check is reported, not thrown.
std::vector<RunReevaluation> reevaluate_bundle(const ReevaluateOptions& options, const OfficialLookup& official);

}  // namespace lra::host
