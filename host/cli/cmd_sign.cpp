// `lrahost sign RESULT... --key KEY`: signs finished results after the fact,
// as `run --sign-key` would have (results/signature.h), so that older
// unsigned runs pass `verify --trusted-keys`. Every file is checked first —
// it must verify valid, and carry no signature — and only then are they
// written, each atomically: a refused file leaves all of them as they were.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "common/ed25519.h"
#include "common/json_file.h"
#include "lra/status.h"
#include "results/result.h"
#include "results/signature.h"
#include "results/verify.h"
#include "runs/official_registry.h"

namespace lra::host {
namespace fs = std::filesystem;

namespace {

struct SignArgs {
  std::vector<std::string> results;
  std::string key;
};

int sign_command(const SignArgs& a) {
  const Ed25519PrivateKey key = load_ed25519_private_key(a.key);  // a key that cannot sign: exit 2 before any file
  std::vector<fs::path> inputs(a.results.begin(), a.results.end());
  const auto files = collect_result_files(inputs);
  std::vector<std::pair<fs::path, nlohmann::json>> signed_results;
  for (const auto& f : files) {
    if (f.filename() != kResultFileName)
      throw Error(ErrorKind::usage, f.string() + ": sign rewrites a run's " + kResultFileName +
                                        " in place; give the run directory or its " + kResultFileName +
                                        " (nothing was signed)");
    const VerifyReport report = verify_result_file(f, registry_official);
    if (!report.readable || !report.valid) {
      std::string why;
      for (const auto& r : report.reasons) why += "; " + r;
      throw Error(ErrorKind::rules, f.string() + " does not verify, so it is not signed (nothing was signed)" + why);
    }
    nlohmann::json result = read_json_file(f, ErrorKind::data, kResultFileName);
    if (result.contains("signature")) {
      const SignatureCheck check = check_signature(result);
      throw Error(ErrorKind::usage, f.string() + " is already signed" +
                                        (check.valid ? " by key " + check.key_id : std::string(" (invalid signature)")) +
                                        "; a result carries one signature (nothing was signed)");
    }
    result["signature"] = sign_digest(key, result.at("digest").get<std::string>());
    signed_results.emplace_back(f, std::move(result));
  }
  for (const auto& [file, result] : signed_results) {
    write_result(file.parent_path(), result);
    std::printf("%s: signed by %s\n", file.c_str(), key.key_id.c_str());
  }
  return 0;
}

}  // namespace

void add_sign_command(CLI::App& app, CommandSlot& slot) {
  auto a = std::make_shared<SignArgs>();
  auto* s = app.add_subcommand("sign", "Sign finished, valid, unsigned results with an Ed25519 key (as run --sign-key)");
  s->add_option("results", a->results, "Result files, run directories or folders holding them")->required();
  s->add_option("--key", a->key, "Ed25519 private key (PEM, from `lrahost keygen`)")->required();
  on_parsed(s, slot, a, [](SignArgs& args) { return sign_command(args); });
}

}  // namespace lra::host
