// `lrahost verify`: checks result files against the schema, their digest, the
// division rules and the parameter budget, and says why in plain words.
//
// A result is VALID when it is well formed, its digest matches its content,
// its parameter budget holds, a "closed" claim passes the closed checks, and
// the host that wrote it declared it valid (with no invalid_reasons). Its
// DIVISION is "closed" only if it claims closed and:
//   - overrides and division_reasons are empty,
//   - task.preset is absent, null or "official",
//   - task.manifest_sha256 is the SHA-256 of a released official manifest of
//     task.name in this host's registry (any release, the newest or an older
//     one: released manifests are frozen, so their results stay closed); a
//     task.manifest_release the file names must be that release;
//   - and the file's content agrees with that manifest, not just its hash
//     (results/closed_checks.h): config is the manifest's own (train.seed
//     aside), task.examples are the official split sizes, and for generated
//     data task.data_fingerprint is the official data's, and the parameter
//     budget's inputs are the protocol's: rules.reference_params is the
//     count of the reference Transformer the host builds from that manifest
//     (not a number the file may choose) and rules.param_budget_ratio the
//     manifest's.
// A result that records a reference configuration (run --reference) must
// carry the compiled-in table's entry for its plugin and task, and be open.
// A self-pretrained result (config.pretrain) must record its phase, on the
// task's training split, with the objective the rules give its mixer
// (docs/rules.md "Self-pretraining"); pretraining/encoder.pt beside the file
// must have the recorded hash.
// A signature, when present, must verify over the digest (signed_by names
// its key); model.pt beside the file must have the recorded model.sha256.
// A "closed" claim that fails these is invalid, with the reasons; an "open"
// claim is never promoted to closed.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lra::host {

// One released official manifest of a task, as verify needs it.
struct OfficialManifest {
  std::string release;        // e.g. "lra-v1.2"
  std::string sha256;         // hex of the manifest's bytes
  std::string note;           // what a reader comparing with the paper must know ("" = nothing)
  std::string superseded_by;  // the newest release when this one is older, else ""
  // What the protocol fixes, for checking a closed claim against it rather
  // than against the file's word (results/closed_checks.h); unset = not checked.
  nlohmann::json config;      // the manifest resolved as `run` records it in "config"
  nlohmann::json defaults;    // the same for a manifest that sets nothing (keys a result may predate)
  int64_t train_examples = -1, val_examples = -1, test_examples = -1;  // official split sizes
  std::string data_fingerprint;  // generated data: the official data's fingerprint, else ""
  // A protocol with [settings]: each setting's official data (the fields
  // above are the baseline's), by setting name.
  struct SettingData {
    int64_t train_examples = -1, val_examples = -1, test_examples = -1;
    std::string data_fingerprint;
  };
  std::map<std::string, SettingData> setting_data;
  int64_t reference_params = -1;  // the reference Transformer of this manifest on the task's shape; -1 = not checked
  // A protocol with a [grid] over the model: the reference Transformer of the
  // configuration a result records (checked first to be a point of the
  // grid); unset = reference_params decides.
  std::function<int64_t(const nlohmann::json& config)> reference_params_at;
  std::string protocol = "lra-v1";  // the release's protocol: "lra-v1", or "lra-spt-v1" (self-pretraining)
};

// Every released official manifest this host knows for `task` (oldest
// first); empty when it has none (a third-party task).
using OfficialLookup = std::function<std::vector<OfficialManifest>(const std::string& task)>;

struct VerifyReport {
  std::string path;       // the file ("" for verify_result_json)
  bool readable = false;  // the file could be read and is a JSON object
  std::string division;   // "closed" or "open" as recomputed; "" when unreadable
  bool valid = false;
  std::vector<std::string> reasons;  // every problem found; empty when valid
  // A closed result's release (found by the manifest hash, never read from
  // the file), with its registry note and the release superseding it.
  std::optional<OfficialManifest> release;
  // The key id of a signature that verifies ("" = unsigned or not verified).
  std::string signed_by;
  // A result made under a reference configuration (run --reference), in words
  // from the checked record: "LRA Table 1 configuration (…, entry local/image)";
  // "" when none (or the record failed, then with the reason).
  std::string configuration;
  // "from scratch" or "self-pretrained" (a pretraining phase, checked by
  // results/pretraining_check.cpp); "" when unreadable.
  std::string protocol;
  // What a reader should know that does not touch validity: a Python mixer's
  // working file changed since the run (the run is judged by its own copy).
  std::vector<std::string> notes;
};

VerifyReport verify_result_json(const nlohmann::json& result, const OfficialLookup& official);

// Never throws for a bad file: an unreadable or unparseable one gives
// readable = false, valid = false and the reason. Also checks model.pt beside
// it and, for a Python mixer, the run's copy of its sources (RESULT_DIR/
// plugin-source, else the files at plugin.file's folder), each when it is
// there; a working file changed since a run that kept its copy is a note.
VerifyReport verify_result_file(const std::filesystem::path& file, const OfficialLookup& official);

// {"path", "readable", "division", "valid", "reasons"} for machine-readable output.
nlohmann::json to_json(const VerifyReport& report);

// Expands command-line arguments: a file stands for itself; a directory for
// every "result.json" below it (recursively), sorted. Order of the arguments
// is kept and duplicates dropped. Throws lra::Error(usage) naming the path
// when an argument does not exist or a directory holds no result.json.
std::vector<std::filesystem::path> collect_result_files(
    const std::vector<std::filesystem::path>& args);

}  // namespace lra::host
