// manifest/official_data.h — the official data of each released manifest
// (manifests/official-data.toml, compiled in): split sizes, and for generated
// tasks the fingerprint of the data the host's generator makes from the
// manifest's [data] section. What `verify` and `run` compare a closed claim's
// data with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lra::host {

inline constexpr const char* kOfficialDataFile = "official-data.toml";

struct OfficialData {
  std::string release;      // e.g. "lra-v1.2"
  std::string task;
  // A protocol with [settings] (MAD's difficulty settings): the setting whose
  // data the row states; "baseline" (the key left out) = the manifest's own.
  std::string setting = "baseline";
  int64_t train = 0, val = 0, test = 0;
  std::string fingerprint;  // "sha256:..." for generated data whose fingerprint is carried; "" otherwise
  // A task outside LRA's table (model/task_shape.h) states the model-facing
  // shape of its official data here, so verify can count the protocol's
  // reference Transformer without loading the data: 0 = not stated.
  int64_t vocab_size = 0, num_classes = 0;
  bool sequence = false;  // a target per position (SDK 1.4 sequence task): num_classes is its target classes
  std::string readout = "every_position";  // SDK 1.5: "from_last_state" (MAD's compression decoder)
};

// Parses the table text (exposed for tests); `source` names it in messages. A
// malformed table is lra::Error(internal): the host was built from a broken tree.
std::vector<OfficialData> parse_official_data(std::string_view text, const std::string& source);

// Every row of the embedded table, parsed once.
const std::vector<OfficialData>& official_data();

// The row for (release, task, setting), or std::nullopt; "" = "baseline".
std::optional<OfficialData> find_official_data(const std::string& release, const std::string& task,
                                              const std::string& setting = "");

}  // namespace lra::host
