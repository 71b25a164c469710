// `lrahost verify`: recomputes division and validity of result files against
// the manifests compiled into this host.
#include <cstdio>

#include "cli/commands.h"
#include "common/sha256.h"
#include "lra/status.h"
#include "manifest/presets.h"
#include "results/verify.h"

namespace lra::host {

int verify_command(const std::vector<std::string>& args) {
  const OfficialLookup official = [](const std::string& task) -> std::optional<std::string> {
    if (const EmbeddedFile* f = find_official(task)) return sha256_hex(f->text);
    return std::nullopt;
  };
  int code = 0;
  for (const auto& file : collect_result_files({args.begin(), args.end()})) {
    const VerifyReport rep = verify_result_file(file, official);
    if (!rep.readable) {
      std::printf("%s: UNREADABLE\n", file.c_str());
      code = std::max(code, static_cast<int>(ErrorKind::data));
    } else {
      std::printf("%s: %s, %s\n", file.c_str(), rep.division.c_str(), rep.valid ? "valid" : "INVALID");
      if (!rep.valid) code = std::max(code, static_cast<int>(ErrorKind::rules));
    }
    for (const auto& r : rep.reasons) std::printf("  - %s\n", r.c_str());
  }
  return code;
}

}  // namespace lra::host
