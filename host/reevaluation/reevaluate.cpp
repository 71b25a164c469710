#include "reevaluation/reevaluate.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "common/atomic_file.h"
#include "common/build_info.h"
#include "common/json_input.h"
#include "common/utc_time.h"
#include "lra/status.h"
#include "reevaluation/bundle.h"
#include "isolation/held_folder.h"
#include "reevaluation/reevaluate_run.h"
#include "reevaluation/reevaluation_signature.h"
#include "reevaluation/source_build.h"
#include "reevaluation/submitted_plugin.h"
#include "results/result.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Where the sandbox's working folders go: under /tmp, in a folder user nobody
// may traverse (mode 0711). bubblewrap, run as nobody for a root verifier,
// cannot reach a path under a folder only root may enter (mkdtemp's 0700,
// /root), which is where --out may well lie; what the sandbox reads is
// staged there.
constexpr const char* kSandboxAreaPrefix = "lrahost-sandbox-area-";

std::string out_prefix(const fs::path& out) { return "." + out.filename().string() + ".reevaluating-"; }

void check_out_folder(const fs::path& out) {
  std::error_code ec;
  if (fs::exists(out, ec) && (!fs::is_directory(out, ec) || !fs::is_empty(out, ec)))
    throw Error(ErrorKind::usage, "--out " + out.string() + " is not empty; give a new or empty folder");
}

}  // namespace

std::vector<RunReevaluation> reevaluate_bundle(const ReevaluateOptions& o, const OfficialLookup& official) {
  if (o.sandbox) {
    if (auto why = sandbox_unavailable())
      throw Error(ErrorKind::usage, "cannot re-evaluate safely: " + *why +
                                        ". Submitted plugin code only runs inside the sandbox; pass --no-sandbox to "
                                        "run it unconfined on a machine you can afford to lose");
  }
  const fs::path out = fs::absolute(o.out).lexically_normal();
  check_out_folder(out);
  const fs::path parent = out.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw Error(ErrorKind::storage, "cannot create " + parent.string() + ": " + ec.message());
  // What killed verifiers left: their half-filled --out and their sandbox areas.
  HeldFolder::sweep_abandoned(parent, out_prefix(out));
  HeldFolder::sweep_abandoned("/tmp", kSandboxAreaPrefix);
  // Everything is written beside --out first and becomes --out at the end:
  // a killed verifier leaves no half-filled --out, and its folder is swept.
  HeldFolder partial(parent, out_prefix(out), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                                 fs::perms::others_read | fs::perms::others_exec);
  const fs::path unpacked = partial.path() / "bundle";
  const json index = extract_bundle(o.bundle, unpacked);
  const json* runs = json_at(index, {"runs"});
  if (!runs || !runs->is_array() || runs->empty())
    throw Error(ErrorKind::data, "bundle " + o.bundle.string() + ": bundle.json lists no runs");
  HeldFolder area("/tmp", kSandboxAreaPrefix, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  // One bundle cannot hold the maintainer past its budget, however many runs it holds.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.bundle_timeout_seconds);
  // Each bundled source is built once, by the first run that needs it.
  std::map<std::string, SourceBuild> builds;  // the submitted .so's SHA-256 -> what its source built
  auto build_once = [&](const SubmittedPlugin& p, int64_t seconds_left) -> const SourceBuild& {
    const std::string sha = p.sha256();
    if (auto it = builds.find(sha); it != builds.end()) return it->second;
    SourceBuild& b = builds[sha];
    const auto sdk = o.sdk ? o.sdk : installed_sdk_prefix();
    if (!sdk) {
      b.failure = "cannot build its bundled source here: this lrahost is not an installed one (no "
                  "lib/cmake/LraSdk beside its folder); re-evaluate with an installed lrahost (cmake --install) "
                  "or pass --sdk PREFIX";
      return b;
    }
    SourceBuildOptions bo;
    bo.source = p.source_folder;
    bo.area = area.path() / ("build-" + sha.substr(0, 16));
    bo.sdk = *sdk;
    bo.limits = o.limits;
    bo.limits.timeout_seconds = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(o.build_timeout_seconds, seconds_left)));
    bo.sandboxed = o.sandbox;
    bo.threads = o.threads;
    b = build_plugin_source(bo);
    return b;
  };
  std::vector<RunReevaluation> results;
  for (const auto& entry : *runs) {
    RunReevaluation r;
    r.run = entry.value("dir", std::string());
    const auto submitted = submitted_plugin(unpacked, entry.value("plugin", std::string()));
    if (!is_allowed_bundle_name("runs/" + r.run + "/result.json") || !submitted ||
        !fs::is_regular_file(unpacked / "runs" / r.run / "result.json"))
      throw Error(ErrorKind::data, "bundle " + o.bundle.string() + ": bundle.json run entry " + entry.dump() +
                                       " does not name a run folder and plugin the bundle holds");
    const fs::path run_dir = unpacked / "runs" / r.run;
    r.result_file = run_dir / kResultFileName;
    r.report = {{"schema", kReevaluationSchema},
                {"run", r.run},
                {"bundle", o.bundle.filename().string()},
                {"verifier", {{"version", build_info().version}, {"git_revision", build_info().git_revision}}},
                {"checked_at", utc_now()}};
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() < 1) {
      r.reasons.push_back("not re-evaluated: the bundle's time budget of " + std::to_string(o.bundle_timeout_seconds) +
                          " s (--bundle-timeout) was spent on the runs before it");
    } else {
      const RunContext ctx{o,       official,  run_dir, *submitted, area.path() / r.run, unpacked / "logs",
                           static_cast<int>(std::min<int64_t>(o.limits.timeout_seconds, left.count())),
                           [&, left]() -> const SourceBuild& { return build_once(*submitted, left.count()); }};
      try {
        reevaluate_run(ctx, r);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::storage || e.kind() == ErrorKind::memory) throw;
        r.reasons.push_back(std::string("cannot re-evaluate: ") + e.what());
      }
    }
    r.valid = r.reasons.empty();
    r.report["valid"] = r.valid;
    r.report["reasons"] = r.reasons;
    r.report["facts"] = r.facts;
    r.report = seal_reevaluation(std::move(r.report), o.sign_key.get());
    write_file_atomic(run_dir / kReevaluationFileName, r.report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    fs::remove_all(area.path() / r.run, ec);  // the next run starts with the space this one used
    r.result_file = out / "runs" / r.run / kResultFileName;
    results.push_back(std::move(r));
  }
  check_out_folder(out);  // still empty: nothing else wrote there meanwhile
  if (fs::exists(out, ec)) fs::remove(out, ec);
  fs::rename(unpacked, out, ec);
  if (ec) throw Error(ErrorKind::storage, "cannot move the re-evaluated bundle to " + out.string() + ": " + ec.message());
  return results;
}

}  // namespace lra::host
