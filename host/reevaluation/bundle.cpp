#include "reevaluation/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "common/atomic_file.h"
#include "common/json_input.h"
#include "common/sha256.h"
#include "lra/status.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The largest file of each kind a bundle may carry: generous for real
// submissions (an official Path-X model is well under 1 GiB), bounded so a
// hostile archive cannot fill the verifier's disk one entry at a time.
constexpr int64_t kMaxIndexBytes = 16ll << 20;
constexpr int64_t kMaxResultBytes = 64ll << 20;
constexpr int64_t kMaxModelBytes = 8ll << 30;
constexpr int64_t kMaxPluginBytes = 1ll << 30;
constexpr size_t kMaxEntries = 10000;

int64_t size_limit(const std::string& name) {
  if (name == kBundleIndexName) return kMaxIndexBytes;
  if (name.size() > 12 && name.compare(name.size() - 12, 12, "/result.json") == 0) return kMaxResultBytes;
  if (name.size() > 9 && name.compare(name.size() - 9, 9, "/model.pt") == 0) return kMaxModelBytes;
  return kMaxPluginBytes;
}

struct ArchiveFree {
  void operator()(archive* a) const noexcept { archive_write_free(a); }
};
struct ArchiveReadFree {
  void operator()(archive* a) const noexcept { archive_read_free(a); }
};
struct EntryFree {
  void operator()(archive_entry* e) const noexcept { archive_entry_free(e); }
};

}  // namespace

bool is_allowed_bundle_name(const std::string& name) {
  static const std::regex run_file(R"(runs/[A-Za-z0-9_-][A-Za-z0-9._-]{0,79}/(result\.json|model\.pt))");
  static const std::regex plugin_file(R"(plugins/[0-9a-f]{64}\.so)");
  return name == kBundleIndexName || std::regex_match(name, run_file) || std::regex_match(name, plugin_file);
}

void write_bundle(const fs::path& out, const json& index, const std::vector<BundleFile>& files) {
  std::error_code ec;
  if (fs::exists(out, ec))
    throw Error(ErrorKind::usage, "bundle " + out.string() + " already exists; choose another --out or remove it");
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorKind::usage, "cannot write bundle " + out.string() + ": folder " + dir.string() + " does not exist");
  const fs::path tmp = dir / ("." + out.filename().string() + ".tmp-" + std::to_string(getpid()));
  auto fail = [&](const std::string& what) {
    fs::remove(tmp, ec);
    throw Error(ErrorKind::storage, "cannot write bundle " + out.string() + ": " + what +
                                        "; free space or choose another --out");
  };
  std::unique_ptr<archive, ArchiveFree> a(archive_write_new());
  archive_write_set_format_pax_restricted(a.get());
  if (archive_write_open_filename(a.get(), tmp.c_str()) != ARCHIVE_OK) fail(archive_error_string(a.get()));
  auto add = [&](const std::string& name, const std::string* bytes, const fs::path* source) {
    std::unique_ptr<archive_entry, EntryFree> e(archive_entry_new());
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    const int64_t size = bytes ? static_cast<int64_t>(bytes->size()) : static_cast<int64_t>(fs::file_size(*source));
    archive_entry_set_size(e.get(), size);
    if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK) fail(archive_error_string(a.get()));
    if (bytes) {
      if (archive_write_data(a.get(), bytes->data(), bytes->size()) < 0) fail(archive_error_string(a.get()));
    } else {
      std::ifstream in(*source, std::ios::binary);
      if (!in) throw Error(ErrorKind::usage, "cannot read " + source->string() + ": " + std::strerror(errno));
      std::vector<char> buf(1 << 20);
      int64_t written = 0;
      while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto got = in.gcount();
        if (got <= 0) break;
        if (archive_write_data(a.get(), buf.data(), static_cast<size_t>(got)) < 0) fail(archive_error_string(a.get()));
        written += got;
      }
      if (written != size) fail(source->string() + " changed while it was packed");
    }
  };
  const std::string index_text = index.dump(2) + "\n";
  add(kBundleIndexName, &index_text, nullptr);
  for (const auto& f : files) add(f.name, nullptr, &f.source);
  if (archive_write_close(a.get()) != ARCHIVE_OK) fail(archive_error_string(a.get()));
  a.reset();
  // Make the bytes durable before the name appears.
  if (FILE* fp = std::fopen(tmp.c_str(), "rb")) {
    const int rc = fsync(fileno(fp));
    std::fclose(fp);
    if (rc != 0) fail(std::strerror(errno));
  }
  fs::rename(tmp, out, ec);
  if (ec) fail(ec.message());
}

namespace {

// What the bundle holds, as extracted: name -> SHA-256 of the bytes, and the text of bundle.json.
struct Extracted {
  std::map<std::string, std::string> hashes;
  std::string index_text;
};

// The refusal of a malformed or hostile bundle.
Error bad_bundle(const fs::path& bundle, const std::string& what) {
  return Error(ErrorKind::data, "bundle " + bundle.string() + ": " + what +
                                    " (expected a bundle written by `lrahost submit`)");
}

// The bundle exists and `dest` is a new or empty folder, created.
void prepare_extraction(const fs::path& bundle, const fs::path& dest) {
  std::error_code ec;
  if (!fs::is_regular_file(bundle, ec))
    throw Error(ErrorKind::usage, "no such bundle file: " + bundle.string() + " (give the file `lrahost submit` wrote)");
  if (fs::exists(dest, ec) && !fs::is_empty(dest, ec))
    throw Error(ErrorKind::usage, "--out " + dest.string() + " is not empty; give a new or empty folder");
  fs::create_directories(dest, ec);
  if (ec) throw Error(ErrorKind::storage, "cannot create " + dest.string() + ": " + ec.message());
}

// An entry's header: a regular file, of an allowed name, new, within the entry count and its size limit.
void check_entry_header(const fs::path& bundle, archive_entry* e, const std::string& name, const Extracted& got) {
  if (archive_entry_filetype(e) != AE_IFREG)
    throw bad_bundle(bundle, "entry '" + name + "' is not a regular file (links and devices are refused)");
  if (!is_allowed_bundle_name(name)) throw bad_bundle(bundle, "entry '" + name + "' is not a name a bundle may hold");
  if (got.hashes.count(name)) throw bad_bundle(bundle, "entry '" + name + "' appears twice");
  if (got.hashes.size() >= kMaxEntries)
    throw bad_bundle(bundle, "more than " + std::to_string(kMaxEntries) + " entries");
  const int64_t declared = archive_entry_size(e);
  if (declared < 0 || declared > size_limit(name))
    throw bad_bundle(bundle, "entry '" + name + "' is " + std::to_string(declared) + " bytes, over the limit of " +
                                 std::to_string(size_limit(name)));
}

// Writes the current entry's bytes to dest/name, hashing them (bundle.json's also kept as text).
void extract_entry(const fs::path& bundle, archive* a, const fs::path& dest, const std::string& name,
                   Extracted& got) {
  std::error_code ec;
  const fs::path target = dest / name;
  fs::create_directories(target.parent_path(), ec);
  if (ec) throw Error(ErrorKind::storage, "cannot create " + target.parent_path().string() + ": " + ec.message());
  std::ofstream out(target, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(ErrorKind::storage, "cannot write " + target.string() + ": " + std::strerror(errno));
  Sha256 h;
  std::vector<char> buf(1 << 20);
  int64_t total = 0;
  for (;;) {
    const la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
    if (n < 0) throw bad_bundle(bundle, "entry '" + name + "' is unreadable: " + archive_error_string(a));
    if (n == 0) break;
    total += n;
    if (total > size_limit(name)) throw bad_bundle(bundle, "entry '" + name + "' is longer than it declares");
    h.update(buf.data(), static_cast<size_t>(n));
    out.write(buf.data(), n);
    if (name == kBundleIndexName) got.index_text.append(buf.data(), static_cast<size_t>(n));
  }
  out.close();
  if (!out) throw Error(ErrorKind::storage, "cannot write " + target.string() + ": " + std::strerror(errno));
  const std::string& sha = got.hashes[name] = h.hex_digest();
  if (name.rfind("plugins/", 0) == 0 && name.substr(8, 64) != sha)
    throw bad_bundle(bundle, "entry '" + name + "' is named by a SHA-256 its bytes do not have (" + sha + ")");
}

// Every entry of the archive, checked and extracted into `dest`.
Extracted extract_entries(const fs::path& bundle, const fs::path& dest) {
  std::unique_ptr<archive, ArchiveReadFree> a(archive_read_new());
  archive_read_support_format_tar(a.get());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_none(a.get());
  if (archive_read_open_filename(a.get(), bundle.c_str(), 1 << 16) != ARCHIVE_OK)
    throw bad_bundle(bundle, std::string("not a tar archive: ") + archive_error_string(a.get()));
  Extracted got;
  archive_entry* e = nullptr;
  for (;;) {
    const int rc = archive_read_next_header(a.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK) throw bad_bundle(bundle, std::string("unreadable archive: ") + archive_error_string(a.get()));
    const char* raw = archive_entry_pathname(e);
    const std::string name = raw ? raw : "";
    if (archive_entry_filetype(e) == AE_IFDIR) continue;  // folders are implied by the names
    check_entry_header(bundle, e, name, got);
    extract_entry(bundle, a.get(), dest, name, got);
  }
  return got;
}

// bundle.json parsed, of the bundle schema, and listing exactly the entries extracted with their hashes.
json check_bundle_index(const fs::path& bundle, const Extracted& got) {
  if (!got.hashes.count(kBundleIndexName)) throw bad_bundle(bundle, "no bundle.json in it");
  json index;
  try {
    index = parse_json_input(got.index_text);
  } catch (const JsonInputError& err) {
    throw bad_bundle(bundle, std::string("bundle.json is not valid JSON: ") + err.what());
  }
  if (!index.is_object() || index.value("schema", json()) != kBundleSchema)
    throw bad_bundle(bundle, std::string("bundle.json: schema is not \"") + kBundleSchema + "\"");
  const json& listed = index.value("files", json());
  if (!listed.is_object()) throw bad_bundle(bundle, "bundle.json: 'files' must be an object of name -> sha256");
  std::set<std::string> seen;
  for (const auto& [name, sha] : listed.items()) {
    if (!sha.is_string()) throw bad_bundle(bundle, "bundle.json: files." + name + " must be a SHA-256 string");
    const auto it = got.hashes.find(name);
    if (it == got.hashes.end())
      throw bad_bundle(bundle, "bundle.json lists '" + name + "', which the archive does not hold");
    if (it->second != sha.get<std::string>())
      throw bad_bundle(bundle,
                       "entry '" + name + "' has SHA-256 " + it->second + ", bundle.json says " + sha.get<std::string>());
    seen.insert(name);
  }
  for (const auto& [name, sha] : got.hashes)
    if (name != kBundleIndexName && !seen.count(name))
      throw bad_bundle(bundle, "entry '" + name + "' is not listed in bundle.json");
  return index;
}

}  // namespace

json extract_bundle(const fs::path& bundle, const fs::path& dest) {
  prepare_extraction(bundle, dest);
  const Extracted got = extract_entries(bundle, dest);
  return check_bundle_index(bundle, got);
}

}  // namespace lra::host
