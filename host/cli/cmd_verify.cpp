// `lrahost verify`: recomputes division and validity of result files against
// the manifests compiled into this host, then checks the files as one
// submission (one host build, one build per plugin, every official seed).
#include <cstdio>

#include "cli/commands.h"
#include "lra/status.h"
#include "cli/official_registry.h"
#include "results/submission.h"
#include "results/verify.h"
#include "results/signature.h"
#include "plot/svg_text.h"

#include <map>

namespace lra::host {

int verify_command(const std::vector<std::string>& args, const std::optional<std::string>& trusted_keys) {
  // The keys first: a bad --trusted-keys folder is exit 2 before any file is read.
  std::map<std::string, std::string> trusted;
  if (trusted_keys) trusted = load_trusted_keys(*trusted_keys);
  auto files = read_submission(collect_result_files({args.begin(), args.end()}), registry_official);
  if (trusted_keys)
    for (auto& f : files) require_trusted_signer(f.report, trusted, *trusted_keys);
  int code = 0;
  for (const auto& f : files) {
    const VerifyReport& rep = f.report;
    if (!rep.readable) {
      std::printf("%s: UNREADABLE\n", f.path.c_str());
      code = std::max(code, static_cast<int>(ErrorKind::data));
    } else {
      std::string release;
      if (rep.release) {
        release = " (release " + rep.release->release;
        if (!rep.release->superseded_by.empty()) release += ", superseded by " + rep.release->superseded_by;
        release += ")";
      }
      std::printf("%s: %s%s, %s, %s\n", f.path.c_str(), rep.division.c_str(), release.c_str(),
                  rep.valid ? "valid" : "INVALID",
                  rep.signed_by.empty() ? "unsigned" : ("signed by " + rep.signed_by).c_str());
      if (rep.release && !rep.release->note.empty()) std::printf("  note: %s\n", rep.release->note.c_str());
      if (!rep.valid) code = std::max(code, static_cast<int>(ErrorKind::rules));
    }
    // Reasons quote the file's own strings: shown with invisible and bidi characters named.
    for (const auto& r : rep.reasons) std::printf("  - %s\n", svg::visible_text(r).c_str());
  }
  const SubmissionReport sub = verify_submission(files, registry_trial_seeds);
  std::printf("submission (%zu result%s): %s, %s\n", sub.files, sub.files == 1 ? "" : "s", sub.division.c_str(),
              sub.valid ? "valid" : "INVALID");
  for (const auto& r : sub.reasons) std::printf("  - %s\n", svg::visible_text(r).c_str());
  if (!sub.valid) code = std::max(code, static_cast<int>(ErrorKind::rules));
  return code;
}

}  // namespace lra::host
