// verify's division stage: a "closed" claim holds only when every closed
// condition is positively established (results/verify.h lists them); an
// "open" claim is never promoted.
#include "results/verify_checks.h"

#include "results/closed_checks.h"

namespace lra::host::verify_internal {
namespace {

using nlohmann::json;

// task.manifest_sha256 names a released official manifest of task.name, the
// file's task.manifest_release (if any) is that release, and the content
// agrees with the manifest; then `release` is set.
bool check_official_release(Checker& c, const json& result, const ResultFields& f, const OfficialLookup& official,
                            std::optional<OfficialManifest>& release) {
  const std::string name = f.task_name->get<std::string>();
  const std::vector<OfficialManifest> released = official ? official(name) : std::vector<OfficialManifest>{};
  const auto have = normalise_sha256(f.manifest_sha->get<std::string>());
  const OfficialManifest* match = nullptr;
  for (const auto& r : released)
    if (have && normalise_sha256(r.sha256) == have) match = &r;
  if (released.empty()) {
    c.fail("division is \"closed\" but this host has no official manifest for task " + quoted(name) +
           " (only official tasks can be closed)");
    return false;
  }
  if (!match) {
    std::string known;
    for (const auto& r : released) known += (known.empty() ? "" : ", ") + r.release + " " + r.sha256;
    c.fail("division is \"closed\" but task.manifest_sha256 " + f.manifest_sha->get<std::string>() +
           " is not a released official manifest of task " + quoted(name) + " (released: " + known +
           "; the manifest was not an official one, or comes from a release newer than this host)");
    return false;
  }
  // The release is derived from the hash; a name in the file must agree with it.
  const json* claimed = c.optional("task.manifest_release", kString | kNull);
  if (claimed && claimed->is_string() && claimed->get<std::string>() != match->release) {
    c.fail("task.manifest_release " + show(*claimed) + " does not match the manifest's hash, which is release " +
           quoted(match->release) + " of task " + quoted(name));
    return false;
  }
  std::vector<std::string> protocol;
  if (!check_closed_against_protocol(result, *match, &protocol)) {
    for (auto& why : protocol) c.fail(std::move(why));
    return false;
  }
  release = *match;
  return true;
}

bool check_closed_claim(Checker& c, const json& result, const ResultFields& f, const OfficialLookup& official,
                        std::optional<OfficialManifest>& release) {
  // A missing field has already been reported by the field stage.
  bool closed = f.division_reasons && f.overrides && f.task_name && f.manifest_sha;
  if (f.overrides && !f.overrides->empty()) {
    closed = false;
    c.fail("division is \"closed\" but overrides is not empty: " + show(*f.overrides) +
           " (any override makes a result open)");
  }
  if (f.division_reasons && !f.division_reasons->empty()) {
    closed = false;
    c.fail("division is \"closed\" but division_reasons is not empty: " + show(*f.division_reasons));
  }
  if (f.preset && f.preset->is_string() && *f.preset != "official") {
    closed = false;
    c.fail("division is \"closed\" but task.preset is " + show(*f.preset) +
           " (only the official preset can be closed)");
  }
  if (f.task_name && f.manifest_sha && !check_official_release(c, result, f, official, release)) closed = false;
  return closed;
}

}  // namespace

bool check_division(Checker& c, const json& result, const ResultFields& f, const OfficialLookup& official,
                    std::optional<OfficialManifest>& release) {
  bool closed = false;
  if (f.division) {
    const std::string claimed = f.division->get<std::string>();
    if (claimed != "closed" && claimed != "open") {
      c.fail("division is " + show(*f.division) + ", expected \"closed\" or \"open\"");
    } else if (claimed == "closed") {
      closed = check_closed_claim(c, result, f, official, release);
    }
  }
  if (!closed) release.reset();
  return closed;
}

}  // namespace lra::host::verify_internal
