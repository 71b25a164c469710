// `lrahost verify`: recomputes division and validity of result files against
// the manifests compiled into this host (the exit code), then checks the
// files as one submission (one host build, one build per plugin, every
// official seed) — a verdict too only with --submission: a user checking one
// valid run of their own has a valid result, not an invalid one.
#include <cstdio>

#include "cli/commands.h"
#include "common/dir_lock.h"
#include "lra/status.h"
#include "runs/official_registry.h"
#include "results/submission.h"
#include "results/verify.h"
#include "results/signature.h"
#include "plot/svg_text.h"

#include <map>

namespace lra::host {

int verify_command(const std::vector<std::string>& args, const std::optional<std::string>& trusted_keys,
                   bool as_submission) {
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
      // The protocol is named only when it is not LRA's own (from scratch).
      const std::string protocol = rep.protocol == "self-pretrained" ? " self-pretrained" : "";
      std::printf("%s: %s%s%s, %s, %s\n", f.path.c_str(), rep.division.c_str(), protocol.c_str(), release.c_str(),
                  rep.valid ? "valid" : "INVALID",
                  rep.signed_by.empty() ? "unsigned" : ("signed by " + rep.signed_by).c_str());
      if (rep.release && !rep.release->note.empty()) std::printf("  note: %s\n", rep.release->note.c_str());
      if (!rep.configuration.empty()) std::printf("  configuration: %s\n", rep.configuration.c_str());
      for (const auto& n : rep.notes) std::printf("  note: %s\n", svg::visible_text(n).c_str());
      if (!rep.valid) code = std::max(code, static_cast<int>(ErrorKind::rules));
    }
    // Reasons quote the file's own strings: shown with invisible and bidi characters named.
    for (const auto& r : rep.reasons) std::printf("  - %s\n", svg::visible_text(r).c_str());
  }
  const SubmissionReport sub = verify_submission(files, registry_trial_seeds);
  const char* plural = sub.files == 1 ? "" : "s";
  if (sub.valid || as_submission)
    std::printf("submission (%zu result%s): %s, %s\n", sub.files, plural, sub.division.c_str(),
                sub.valid ? "valid" : "INVALID");
  else  // the set is no complete submission; each file's verdict above stands
    std::printf("submission (%zu result%s): not valid as one leaderboard submission, for information (each result "
                "is judged above on its own; verify --submission judges them as one)\n",
                sub.files, plural);
  for (const auto& r : sub.reasons) std::printf("  - %s\n", svg::visible_text(r).c_str());
  if (!sub.valid && as_submission) code = std::max(code, static_cast<int>(ErrorKind::rules));
  return code;
}

void add_verify_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<VerifyArgs>();
  auto* v = app.add_subcommand("verify", "Check result files: closed/open, valid/invalid, with reasons");
  v->add_option("results", a->paths, "result.json files or directories");
  v->add_flag("--submission", a->submission,
              "Judge the files as one leaderboard submission too: one host build, one build per plugin, every "
              "official trial seed (exit 4 otherwise)");
  v->add_option("--trusted-keys", a->trusted_keys, "Folder of Ed25519 public keys (*.pem): every result must be signed "
                                                   "by one of them");
  auto& re = a->reevaluate;
  v->add_option("--reevaluate", re.bundle, "A bundle from `lrahost submit`: re-evaluate every run from its weights "
                                           "(plugin code runs in a bubblewrap sandbox)");
  v->add_option("--out", re.out, "--reevaluate: folder to unpack the bundle into and keep, with a reevaluation.json "
                                 "beside each result (default: a temporary folder, removed)");
  v->add_option("--data-dir", re.data_dir, "--reevaluate: data root (default: as for run)");
  v->add_option("--device", re.device, "--reevaluate: cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  add_threads_option(v, re.threads, "--reevaluate: CPU threads (0 = all cores)");
  v->add_option("--private-seed", re.private_seed,
                "--reevaluate: seed of the private test set (default: drawn at random and never written)");
  v->add_option("--private-examples", re.private_examples,
                "--reevaluate: size of the private test set (default: that of the public test split)")
      ->check(CLI::NonNegativeNumber);
  v->add_option("--sandbox-memory", re.memory_gib, "--reevaluate: address-space limit of the sandbox, GiB")
      ->capture_default_str()->check(CLI::PositiveNumber);
  v->add_option("--sandbox-timeout", re.timeout_s, "--reevaluate: time limit of one run's mixer process, seconds")
      ->capture_default_str()->check(CLI::PositiveNumber);
  v->add_option("--call-timeout", re.call_timeout_s,
                "--reevaluate: time limit of one request to the mixer process (one forward call), seconds")
      ->capture_default_str()->check(CLI::PositiveNumber);
  v->add_option("--bundle-timeout", re.bundle_timeout_s,
                "--reevaluate: time budget of the whole bundle, seconds; runs after it are reported not re-evaluated")
      ->capture_default_str()->check(CLI::PositiveNumber);
  v->add_option("--build-timeout", re.build_timeout_s,
                "--reevaluate: time limit of building one compiled mixer from its bundled source, seconds")
      ->capture_default_str()->check(CLI::PositiveNumber);
  v->add_option("--sdk", re.sdk, "--reevaluate: install prefix of the lrahost SDK a bundled C++ source is built "
                                 "against (default: the installed lrahost's own)");
  v->add_flag("--no-sandbox", re.no_sandbox, "--reevaluate: run submitted plugin code unconfined (unsafe)");
  v->add_option("--sign-key", re.sign_key, "--reevaluate: the verifying maintainer's Ed25519 private key (PEM): signs "
                                           "each reevaluation.json, which the leaderboard counts only when signed by "
                                           "a key in its --trusted-verifiers");
  v->add_flag("--sign-as-author", re.sign_as_author,
              "--reevaluate: sign each reevaluation.json with your own author key (made on first use in "
              "$LRA_AUTHOR_KEY_DIR or ~/.config/lrahost/author-key): your own leaderboard pages show the check as "
              "'re-evaluated by its author', never as a trusted verifier's");
  on_parsed(v, slot, a, [](VerifyArgs& args) {
    if (args.reevaluate.bundle) {
      if (args.submission)
        throw Error(ErrorKind::usage, "--submission judges result files as one submission; verify --reevaluate "
                                      "judges a bundle's runs one by one");
      if (!args.paths.empty())
        throw Error(ErrorKind::usage, "verify --reevaluate takes the bundle only; verify result files in a separate call");
      args.reevaluate.trusted_keys = args.trusted_keys;
      if (args.reevaluate.sign_key && args.reevaluate.sign_as_author)
        throw Error(ErrorKind::usage, "--sign-key and --sign-as-author each choose the key that signs the reports: "
                                      "give one");
      if (args.reevaluate.out) check_output_path_name(*args.reevaluate.out);  // blank-named: exit 2 before unpacking
      return reevaluate_command(args.reevaluate);
    }
    if (args.reevaluate.sign_key || args.reevaluate.sign_as_author)
      throw Error(ErrorKind::usage, std::string(args.reevaluate.sign_key ? "--sign-key" : "--sign-as-author") +
                                        " signs re-evaluation reports: it goes with --reevaluate BUNDLE");
    if (args.paths.empty())
      throw Error(ErrorKind::usage, "verify needs result.json files or folders, or --reevaluate BUNDLE");
    return verify_command(args.paths, args.trusted_keys, args.submission);
  });
}

}  // namespace lra::host
