#include "manifest/releases.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <toml++/toml.h>

#include "common/sha256.h"
#include "lra/status.h"
#include "manifest/embedded.h"
#include "manifest/manifest.h"

namespace lra::host {
namespace {

[[noreturn]] void broken(const std::string& source, const std::string& what) {
  throw Error(ErrorKind::internal, source + ": " + what + " (the release registry is part of the host's source; "
                                                           "rebuild from an unmodified checkout)");
}

std::string required_string(const toml::table& t, const char* key, const std::string& where,
                            const std::string& source) {
  const auto* v = t.get_as<std::string>(key);
  if (!v || v->get().empty()) broken(source, where + ": missing or empty string '" + key + "'");
  return v->get();
}

std::string normalised_hex(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.rfind("sha256:", 0) == 0) s.erase(0, 7);
  return s;
}

}  // namespace

std::vector<ReleasedManifest> parse_releases(std::string_view text, const std::string& source, bool verify_files) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    broken(source, std::string("not valid TOML: ") + std::string(e.description()));
  }
  if (required_string(root, "schema", "top level", source) != "lrahost.releases/v1")
    broken(source, "schema must be \"lrahost.releases/v1\"");
  const auto* releases = root.get_as<toml::array>("release");
  if (!releases || releases->empty()) broken(source, "no [[release]] entries");

  std::vector<ReleasedManifest> out;
  std::map<std::string, std::string> newest;  // protocol -> its last release
  std::vector<std::string> versions;
  for (std::size_t i = 0; i < releases->size(); ++i) {
    const auto* r = (*releases)[i].as_table();
    const std::string where = "release[" + std::to_string(i) + "]";
    if (!r) broken(source, where + " is not a table");
    const std::string version = required_string(*r, "version", where, source);
    const std::string protocol = required_string(*r, "protocol", where, source);
    if (version.rfind(protocol + ".", 0) != 0)
      broken(source, where + ": version '" + version + "' does not start with its protocol '" + protocol + ".'");
    if (std::find(versions.begin(), versions.end(), version) != versions.end())
      broken(source, where + ": version '" + version + "' is listed twice");
    versions.push_back(version);
    newest[protocol] = version;
    const auto* manifests = r->get_as<toml::array>("manifest");
    if (!manifests || manifests->empty()) broken(source, where + " (" + version + ") lists no [[release.manifest]]");
    std::vector<std::string> tasks;
    for (std::size_t j = 0; j < manifests->size(); ++j) {
      const auto* m = (*manifests)[j].as_table();
      const std::string mwhere = where + ".manifest[" + std::to_string(j) + "]";
      if (!m) broken(source, mwhere + " is not a table");
      ReleasedManifest e;
      e.version = version;
      e.protocol = protocol;
      e.task = required_string(*m, "task", mwhere, source);
      e.file = required_string(*m, "file", mwhere, source);
      e.sha256 = normalised_hex(required_string(*m, "sha256", mwhere, source));
      if (const auto* note = m->get_as<std::string>("note")) e.note = note->get();
      if (std::find(tasks.begin(), tasks.end(), e.task) != tasks.end())
        broken(source, mwhere + ": task '" + e.task + "' appears twice in release " + version);
      tasks.push_back(e.task);
      if (verify_files) {
        const EmbeddedFile* f = find_embedded(e.file);
        if (!f) broken(source, mwhere + ": file '" + e.file + "' is not among the embedded manifests");
        if (sha256_hex(f->text) != e.sha256)
          broken(source, mwhere + ": the bytes of '" + e.file + "' hash to " + sha256_hex(f->text) + ", not " + e.sha256 +
                             " (a released manifest was edited; released bytes never change: restore it and "
                             "make a new release, docs/releases.md)");
        const Manifest parsed = parse_manifest(f->text, "builtin:" + e.file);
        if (parsed.task != e.task)
          broken(source, mwhere + ": '" + e.file + "' declares task '" + parsed.task + "', not '" + e.task + "'");
      }
      out.push_back(std::move(e));
    }
  }
  for (auto& e : out) e.current = newest[e.protocol] == e.version;
  // Bytes carried unchanged into the current release are current, not superseded.
  for (auto& e : out) {
    if (e.current) continue;
    const bool carried = std::any_of(out.begin(), out.end(), [&](const ReleasedManifest& c) {
      return c.current && c.protocol == e.protocol && c.task == e.task && c.sha256 == e.sha256;
    });
    if (!carried) e.superseded_by = newest[e.protocol];
  }
  return out;
}

const std::vector<ReleasedManifest>& released_manifests() {
  static const std::vector<ReleasedManifest> all = [] {
    const EmbeddedFile* f = find_embedded(kReleasesFile);
    if (!f) throw Error(ErrorKind::internal, std::string("the release registry manifests/") + kReleasesFile +
                                                 " is not embedded in this host (rebuild from a complete checkout)");
    return parse_releases(f->text, std::string("builtin:") + kReleasesFile, true);
  }();
  return all;
}

std::optional<ReleasedManifest> find_release(const std::string& task, const std::string& sha256) {
  // The newest release holding these bytes: a manifest carried unchanged into
  // a later release belongs to that one too, and is not superseded.
  const std::string want = normalised_hex(sha256);
  std::optional<ReleasedManifest> found;
  for (const auto& e : released_manifests())
    if (e.task == task && e.sha256 == want) found = e;
  return found;
}

std::optional<ReleasedManifest> current_release(const std::string& task, const std::string& protocol) {
  // A task of two protocols (LRA from scratch and self-pretrained): the
  // default is the protocol it was first released under.
  std::string want = protocol;
  if (want.empty())
    for (const auto& e : released_manifests())
      if (e.task == task) {
        want = e.protocol;
        break;
      }
  for (const auto& e : released_manifests())
    if (e.task == task && e.protocol == want && e.current) return e;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> release_trial_seeds(const std::string& task, const std::string& sha256) {
  const auto r = find_release(task, sha256);
  if (!r) return std::nullopt;
  const EmbeddedFile* f = find_embedded(r->file);
  if (!f) return std::nullopt;  // released_manifests() already checked it is there
  return trial_seeds(parse_manifest(f->text, "builtin:" + r->file));
}

}  // namespace lra::host
