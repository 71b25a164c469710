#include "common/python_source_files.h"

#include <cctype>

#include "common/atomic_file.h"
#include "common/json_input.h"
#include "common/sha256.h"
#include "lra/status.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A recorded SHA-256 in its normal form (common/sha256.h), if it is one.
std::optional<std::string> hex_sha256(const json& v) {
  return v.is_string() ? normalise_sha256(v.get<std::string>()) : std::nullopt;
}

std::vector<std::string> components(const std::string& rel) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t slash = rel.find('/', start);
    parts.push_back(rel.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) return parts;
    start = slash + 1;
  }
}

}  // namespace

std::optional<std::pair<std::string, std::string>> split_python_spec(const std::string& spec) {
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= spec.size()) return std::nullopt;
  return std::make_pair(spec.substr(0, colon), spec.substr(colon + 1));
}

bool is_relative_inside(const std::string& rel) {
  if (rel.empty() || rel.front() == '/' || rel.find('\0') != std::string::npos) return false;
  for (const auto& part : components(rel))
    if (part.empty() || part == "." || part == "..") return false;
  return true;
}

bool is_bundle_safe_path(const std::string& rel) {
  if (rel.size() > kMaxBundlePythonPathBytes || !is_relative_inside(rel)) return false;
  const auto parts = components(rel);
  if (parts.size() > kMaxBundlePythonDepth) return false;
  for (const auto& part : parts) {
    if (part.front() == '.') return false;  // no hidden names, and no "." or ".."
    for (char c : part)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

bool is_bundle_python_path(const std::string& rel) {
  return is_bundle_safe_path(rel) && rel.size() > 3 && rel.compare(rel.size() - 3, 3, ".py") == 0;
}

std::optional<RecordedPythonSources> recorded_python_sources(const json& result) {
  const json* files = json_at(result, {"plugin", "source", "files"});
  const json* spec = json_at(result, {"plugin", "file"});
  if (!files || !files->is_object() || files->empty() || !spec || !spec->is_string()) return std::nullopt;
  const auto parts = split_python_spec(spec->get<std::string>());
  if (!parts) return std::nullopt;
  const fs::path path(parts->first);
  if (!path.is_absolute() || !path.has_filename()) return std::nullopt;
  RecordedPythonSources s{path.parent_path(), path.filename().string(), parts->second, {}};
  for (const auto& [rel, sha] : files->items()) {
    const auto hex = hex_sha256(sha);
    if (!hex || !is_relative_inside(rel)) return std::nullopt;
    s.files[rel] = *hex;
  }
  if (!s.files.count(s.file)) return std::nullopt;
  return s;
}

std::optional<RecordedPythonSources> judged_python_sources(const json& result, const fs::path& result_file) {
  auto s = recorded_python_sources(result);
  if (!s) return s;
  const fs::path copy = result_file.parent_path() / kRunSourceCopyDir;
  std::error_code ec;
  if (fs::is_regular_file(copy / s->file, ec)) {
    s->working_folder = s->folder;
    s->folder = fs::absolute(copy, ec);
    s->copy = true;
  }
  return s;
}

void copy_python_sources(const std::string& plugin_file, const json& source, const fs::path& run_dir) {
  const json record = {{"plugin", {{"file", plugin_file}, {"source", source}}}};
  const auto s = recorded_python_sources(record);
  if (!s) throw Error(ErrorKind::internal, "the Python mixer " + plugin_file + " has no usable source record");
  RecordedPythonSources copy = *s;
  copy.folder = run_dir / kRunSourceCopyDir;
  if (differing_python_sources(copy).empty()) return;  // a resumed run: its copy is there, intact
  for (const auto& [rel, sha] : s->files) {
    const fs::path to = copy.folder / rel;
    std::error_code ec;
    fs::create_directories(to.parent_path(), ec);
    if (ec) throw Error(ErrorKind::storage, storage_failure(to.parent_path(), "cannot make the folder", ec.value()));
    fs::copy_file(s->folder / rel, to, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error(ErrorKind::storage, storage_failure(to, "cannot copy the Python source there", ec.value()));
  }
  for (const auto& d : differing_python_sources(copy))
    throw Error(ErrorKind::plugin, "the Python source " + (s->folder / d.file).string() +
                                       " changed after the mixer was loaded (its copy has sha256 " +
                                       (d.found.empty() ? std::string("none") : d.found) + ", loaded " + d.recorded +
                                       "); start the run again with the sources you mean to run");
}

std::vector<SourceFileDifference> differing_python_sources(const RecordedPythonSources& s) {
  std::vector<SourceFileDifference> out;
  for (const auto& [rel, recorded] : s.files) {
    const fs::path file = s.folder / rel;
    std::error_code ec;
    // A regular file only: a FIFO or /dev node would block or never end.
    std::string found;
    if (fs::is_regular_file(file, ec)) {
      try {
        found = sha256_file(file);
      } catch (const Error&) {
        // unreadable: reported as not there as recorded
      }
    }
    if (found != recorded) out.push_back({rel, recorded, std::move(found)});
  }
  return out;
}

}  // namespace lra::host
