// `lrahost verify --reevaluate BUNDLE`: the maintainer's check of a submission
// from its weights (reevaluation/reevaluate.h), printed per run.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/commands.h"
#include "common/key_pair.h"
#include "common/ed25519.h"
#include "device/blas_kernels.h"
#include "device/device.h"
#include "runs/official_registry.h"
#include "lra/status.h"
#include "reevaluation/reevaluate.h"
#include "results/signature.h"

namespace lra::host {
namespace fs = std::filesystem;

int reevaluate_command(const ReevaluateArgs& a) {
  load_best_blas_kernels();  // may start the program again: before any other work
  ReevaluateOptions o;
  o.bundle = *a.bundle;
  o.data_dir = a.data_dir;
  o.device = a.device;
  o.threads = effective_threads(a.threads);
  o.private_seed = a.private_seed;
  o.private_examples = a.private_examples;
  o.limits.memory_bytes = static_cast<int64_t>(a.memory_gib * double(1ll << 30));
  o.limits.timeout_seconds = a.timeout_s;
  o.call_timeout_seconds = a.call_timeout_s;
  o.bundle_timeout_seconds = a.bundle_timeout_s;
  o.sandbox = !a.no_sandbox;
  o.build_timeout_seconds = a.build_timeout_s;
  if (a.sdk) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::path(*a.sdk) / "lib" / "cmake" / "LraSdk" / "LraSdkConfig.cmake", ec))
      throw Error(ErrorKind::usage, "--sdk " + *a.sdk + " holds no lib/cmake/LraSdk/LraSdkConfig.cmake; give the "
                                    "prefix lrahost was installed into (cmake --install build --prefix PREFIX)");
    o.sdk = fs::absolute(*a.sdk);
  }
  if (a.trusted_keys) {  // a bad folder is exit 2 before the bundle is opened
    o.trusted_keys = load_trusted_keys(*a.trusted_keys);
    o.trusted_keys_dir = *a.trusted_keys;
  }
  if (a.sign_key)  // a key that cannot sign is exit 2 before the bundle is opened
    o.sign_key = std::make_shared<const Ed25519PrivateKey>(load_ed25519_private_key(*a.sign_key));
  if (a.sign_as_author) {
    if (!a.out) throw Error(ErrorKind::usage, "--sign-as-author signs the reports written under --out: give --out DIR");
    bool created = false;
    o.sign_key = std::make_shared<const Ed25519PrivateKey>(author_key(&created));
    if (created)
      std::printf("author key %s made in %s (its public half, %s, lets others check your reports)\n",
                  o.sign_key->key_id.c_str(), author_key_dir().c_str(), kPublicKeyFile);
  }
  bool keep = static_cast<bool>(a.out);
  if (keep) {
    o.out = *a.out;
  } else {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/lrahost-reevaluate-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw Error(ErrorKind::storage, "cannot create a folder under " + tmpl);
    o.out = tmpl;
  }
  std::vector<RunReevaluation> runs;
  try {
    runs = reevaluate_bundle(o, registry_official);
  } catch (...) {
    std::error_code ec;
    if (!keep) fs::remove_all(o.out, ec);
    throw;
  }
  int code = 0;
  std::size_t valid = 0;
  for (const auto& r : runs) {
    std::printf("%s: %s\n", r.run.c_str(), r.valid ? "re-evaluated, valid" : "INVALID");
    for (const auto& f : r.facts) std::printf("  %s\n", f.c_str());
    for (const auto& why : r.reasons) std::printf("  - %s\n", why.c_str());
    if (r.valid) ++valid;
    else code = static_cast<int>(ErrorKind::rules);
  }
  std::printf("bundle %s: %zu of %zu run%s re-evaluated and valid%s\n", o.bundle.c_str(), valid, runs.size(),
              runs.size() == 1 ? "" : "s", o.sandbox ? " (plugin code ran in a bubblewrap sandbox)" : " (NO sandbox)");
  if (keep) {
    std::printf("unpacked with reevaluation.json beside each result: %s\n", o.out.c_str());
    // The leaderboard counts a report only when it is signed by a key it trusts (--trusted-verifiers).
    if (o.sign_key && a.sign_as_author)
      std::printf("reevaluation.json signed by your author key %s: your leaderboard pages show \"re-evaluated by its "
                  "author\"; only a maintainer's key in --trusted-verifiers makes it count\n",
                  o.sign_key->key_id.c_str());
    else if (o.sign_key)
      std::printf("reevaluation.json signed by %s\n", o.sign_key->key_id.c_str());
    else
      std::printf("reevaluation.json written UNSIGNED: the leaderboard shows it as unverified and does not count it "
                  "(pass --sign-key KEY, or --sign-as-author to mark it as your own check)\n");
  }
  std::error_code ec;
  if (!keep) fs::remove_all(o.out, ec);
  return code;
}

}  // namespace lra::host
