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
#include "leaderboard/scores.h"
#include "lra/status.h"
#include "reevaluation/bundle_python.h"
#include "reevaluation/bundle_source.h"

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
// At most this many entries (bundle.json, two per run, the plugins) and bytes
// in all: a bundle is refused on its index before anything else is written.
constexpr size_t kMaxEntries = 1000;
constexpr int64_t kMaxTotalBytes = 64ll << 30;

int64_t size_limit(const std::string& name) {
  if (name == kBundleIndexName) return kMaxIndexBytes;
  if (name.size() > 12 && name.compare(name.size() - 12, 12, "/result.json") == 0) return kMaxResultBytes;
  if (name.size() > 9 && name.compare(name.size() - 9, 9, "/model.pt") == 0) return kMaxModelBytes;
  if (name.size() > 11 && name.compare(name.size() - 11, 11, "/encoder.pt") == 0) return kMaxModelBytes;
  if (name.size() > 21 && name.compare(name.size() - 21, 21, "/fine-tuning-start.pt") == 0) return kMaxModelBytes;
  if (is_bundle_python_entry(name)) return kMaxPythonSourceBytes;
  if (is_bundle_source_entry(name)) return kMaxSourceFileBytes;
  return kMaxPluginBytes;
}

struct ArchiveReadFree {
  void operator()(archive* a) const noexcept { archive_read_free(a); }
};

}  // namespace

bool is_allowed_bundle_name(const std::string& name) {
  static const std::regex run_file(R"(runs/[A-Za-z0-9_-][A-Za-z0-9._-]{0,79}/(result\.json|model\.pt|pretraining/encoder\.pt|pretraining/fine-tuning-start\.pt))");
  static const std::regex plugin_file(R"(plugins/[0-9a-f]{64}\.so)");
  return name == kBundleIndexName || std::regex_match(name, run_file) || std::regex_match(name, plugin_file) ||
         is_bundle_python_entry(name) || is_bundle_source_entry(name);
}

namespace {

// The refusal of a malformed or hostile bundle.
Error bad_bundle(const fs::path& bundle, const std::string& what) {
  return Error(ErrorKind::data, "bundle " + bundle.string() + ": " + what +
                                    " (expected a bundle written by `lrahost submit`)");
}

// What bundle.json promises, checked before any other entry is written: every
// file by name with its SHA-256 and size, and the runs that name them.
struct Plan {
  json index;
  std::string text;  // bundle.json's bytes, kept as they came
  std::map<std::string, std::pair<std::string, int64_t>> files;  // name -> (sha256, bytes)
  int64_t total = 0;
  std::map<std::string, BundlePythonPlugin> python;  // run folder -> the Python mixer it names
};

// A run's "plugin": a .so named by its SHA-256, or a Python mixer's class in
// a folder named by its sources' (bundle_python.h).
bool is_run_plugin(const std::string& plugin) {
  static const std::regex so(R"(plugins/[0-9a-f]{64}\.so)");
  return std::regex_match(plugin, so) || parse_bundle_python_plugin(plugin).has_value();
}

// bundle.json parsed: the schema, a run list whose folders are distinct, and
// `files`/`sizes` listing exactly each run's result.json and model.pt and
// each plugin a run names (a Python mixer's: its class's file and any other
// source file in its folder), within the entry, per-file and total caps.
Plan plan_from_index(const fs::path& bundle, const std::string& text) {
  Plan plan;
  plan.text = text;
  try {
    plan.index = parse_json_input(text);
  } catch (const JsonInputError& err) {
    throw bad_bundle(bundle, std::string("bundle.json is not valid JSON: ") + err.what());
  }
  const json& index = plan.index;
  if (!index.is_object() || index.value("schema", json()) != kBundleSchema)
    throw bad_bundle(bundle, std::string("bundle.json: schema is not \"") + kBundleSchema + "\"");
  const json& runs = index.value("runs", json());
  if (!runs.is_array() || runs.empty()) throw bad_bundle(bundle, "bundle.json lists no runs");
  // Each run is two entries and names a plugin: this bounds the runs before any is read.
  if (runs.size() > (kMaxEntries - 1) / 2)
    throw bad_bundle(bundle, "bundle.json lists " + std::to_string(runs.size()) + " runs, more than the " +
                                 std::to_string((kMaxEntries - 1) / 2) + " a bundle of at most " +
                                 std::to_string(kMaxEntries) + " entries can hold");
  std::set<std::string> expected, python_folders, source_folders;
  std::map<std::string, size_t> dirs;  // run folder -> its index in `runs`
  for (size_t i = 0; i < runs.size(); ++i) {
    const json& r = runs[i];
    const std::string dir = r.is_object() && r.value("dir", json()).is_string() ? r["dir"].get<std::string>() : "";
    const std::string plugin =
        r.is_object() && r.value("plugin", json()).is_string() ? r["plugin"].get<std::string>() : "";
    if (!is_allowed_bundle_name("runs/" + dir + "/result.json") || !is_run_plugin(plugin))
      throw bad_bundle(bundle, "bundle.json: runs[" + std::to_string(i) + "] " + r.dump() +
                                   " does not name a run folder and a plugin file a bundle may hold");
    // A run listed twice would be evaluated twice (each up to the sandbox's time limit).
    const auto [it, inserted] = dirs.emplace(dir, i);
    if (!inserted)
      throw bad_bundle(bundle, "bundle.json: runs[" + std::to_string(it->second) + "] and runs[" + std::to_string(i) +
                                   "] both name run folder '" + dir + "'; a run is listed once");
    // A self-pretrained run carries its pretraining's weights too (the index says which runs are).
    if (r.value("pretrained", false) == true) expected.insert("runs/" + dir + "/pretraining/encoder.pt");
    // ... and its weights after the fine-tuning's first updates (bundles before they were kept lack them).
    if (r.value("fine_tuning_start", false) == true)
      expected.insert("runs/" + dir + "/pretraining/fine-tuning-start.pt");
    if (const auto python = parse_bundle_python_plugin(plugin)) {
      plan.python[dir] = *python;
      python_folders.insert(python->folder() + "/");
      expected.insert({"runs/" + dir + "/result.json", "runs/" + dir + "/model.pt", python->entry()});
    } else {
      expected.insert({"runs/" + dir + "/result.json", "runs/" + dir + "/model.pt", plugin});
      source_folders.insert(bundle_source_folder(plugin.substr(8, 64)) + "/");  // its source, if it has one
    }
  }
  // A Python mixer's other modules: any safe source name in a folder a run names.
  auto in_python_folder = [&](const std::string& name) {
    if (!is_bundle_python_entry(name)) return false;
    return python_folders.count(name.substr(0, 8 + 64 + 1)) > 0;
  };
  // A compiled mixer's source (bundle_source.h): in the folder of a .so a run names.
  auto in_source_folder = [&](const std::string& name) {
    return is_bundle_source_entry(name) && source_folders.count(name.substr(0, 8 + 64 + 1)) > 0;
  };
  const json& listed = index.value("files", json());
  const json& sizes = index.value("sizes", json());
  if (!listed.is_object()) throw bad_bundle(bundle, "bundle.json: 'files' must be an object of name -> sha256");
  if (!sizes.is_object())
    throw bad_bundle(bundle, "bundle.json: 'sizes' must be an object of name -> bytes (a bundle from an older "
                             "lrahost submit has none; pack it again with this one)");
  if (listed.size() + 1 > kMaxEntries)
    throw bad_bundle(bundle, "bundle.json lists " + std::to_string(listed.size()) + " files, more than the " +
                                 std::to_string(kMaxEntries - 1) + " a bundle may hold besides bundle.json");
  for (const auto& [name, sha] : listed.items()) {
    if (!expected.count(name) && !in_python_folder(name) && !in_source_folder(name))
      throw bad_bundle(bundle, "bundle.json lists '" + name + "', which is not a file of a run it lists");
    if (!sha.is_string()) throw bad_bundle(bundle, "bundle.json: files." + name + " must be a SHA-256 string");
    const json& size = sizes.value(name, json());
    if (!size.is_number_integer() || size.get<int64_t>() < 0)
      throw bad_bundle(bundle, "bundle.json: sizes." + name + " must be the file's size in bytes, got " + size.dump());
    const int64_t bytes = size.get<int64_t>();
    if (bytes > size_limit(name))
      throw bad_bundle(bundle, "bundle.json: '" + name + "' is " + std::to_string(bytes) +
                                   " bytes, over the limit of " + std::to_string(size_limit(name)) + " for its kind");
    plan.files[name] = {sha.get<std::string>(), bytes};
    plan.total += bytes;  // each term is capped, so the sum of at most kMaxEntries cannot overflow
  }
  for (const auto& name : expected)
    if (!plan.files.count(name)) throw bad_bundle(bundle, "bundle.json does not list '" + name + "' of a run it lists");
  // Source folders nest: no listed file may also be a folder of another.
  std::map<std::string, std::pair<size_t, int64_t>> per_source_folder;  // files, bytes
  for (const auto& [name, file] : plan.files) {
    const bool nested = is_bundle_python_entry(name) || is_bundle_source_entry(name);
    for (size_t slash = name.find('/', 8 + 64 + 1); nested && slash != std::string::npos;
         slash = name.find('/', slash + 1))
      if (plan.files.count(name.substr(0, slash)))
        throw bad_bundle(bundle, "bundle.json lists '" + name.substr(0, slash) + "' as a file and as the folder of '" +
                                     name + "'");
    // A compiled mixer's source builds from its CMakeLists.txt at the top.
    if (is_bundle_source_entry(name)) {
      auto& [count, bytes] = per_source_folder[name.substr(0, 8 + 64)];
      ++count;
      bytes += file.second;
      if (count > kMaxSourceFiles || bytes > kMaxSourceFolderBytes)
        throw bad_bundle(bundle, "bundle.json: the source folder " + name.substr(0, 8 + 64) + " holds more than " +
                                     std::to_string(kMaxSourceFiles) + " files or " +
                                     std::to_string(kMaxSourceFolderBytes) + " bytes");
      const std::string top = name.substr(0, 8 + 64) + "/CMakeLists.txt";
      if (!plan.files.count(top))
        throw bad_bundle(bundle, "bundle.json lists '" + name + "' but not '" + top + "', which builds it");
    }
  }
  for (const auto& [name, size] : sizes.items())
    if (!plan.files.count(name)) throw bad_bundle(bundle, "bundle.json: sizes." + name + " names no listed file");
  if (plan.total > kMaxTotalBytes)
    throw bad_bundle(bundle, "its files add up to " + std::to_string(plan.total) + " bytes, over the limit of " +
                                 std::to_string(kMaxTotalBytes) + " for a whole bundle");
  return plan;
}

// A new or empty `dest`, and a fresh folder beside it to extract into: only a
// bundle that passes every check becomes `dest`, so a refused one leaves nothing.
struct Staging {
  fs::path dir;
  fs::path created_top;  // the highest parent folder made for it ("" = none)
  bool keep = false;
  ~Staging() {
    if (keep) return;
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
    if (created_top.empty()) return;
    for (fs::path p = dir.parent_path(); !p.empty(); p = p.parent_path()) {
      fs::remove(p, ec);  // only empty folders: those this extraction made
      if (p == created_top) break;
    }
  }
};

void prepare_staging(const fs::path& bundle, const fs::path& dest, Staging& st) {
  std::error_code ec;
  if (!fs::is_regular_file(bundle, ec))
    throw Error(ErrorKind::usage, "no such bundle file: " + bundle.string() + " (give the file `lrahost submit` wrote)");
  if (fs::exists(dest, ec) && (!fs::is_directory(dest, ec) || !fs::is_empty(dest, ec)))
    throw Error(ErrorKind::usage, "--out " + dest.string() + " is not empty; give a new or empty folder");
  const fs::path parent = fs::absolute(dest).parent_path();
  for (fs::path p = parent; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    st.created_top = p;
    if (p == p.parent_path()) break;
  }
  fs::create_directories(parent, ec);
  if (ec) throw Error(ErrorKind::storage, "cannot create " + parent.string() + ": " + ec.message());
  std::string tmpl = (parent / ("." + fs::absolute(dest).filename().string() + ".extracting-XXXXXX")).string();
  if (!mkdtemp(tmpl.data()))
    throw Error(ErrorKind::storage, "cannot create a folder in " + parent.string() + ": " + std::strerror(errno) +
                                        "; choose another --out");
  st.dir = tmpl;
  fs::permissions(st.dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec, ec);
}

// The current entry's bytes, counted as they come (a header may lie about its
// size), into `out` and the hash; `text` also keeps them when given.
std::string copy_entry(const fs::path& bundle, archive* a, const std::string& name, int64_t limit, std::ostream* out,
                       std::string* text) {
  Sha256 h;
  std::vector<char> buf(1 << 20);
  int64_t total = 0;
  for (;;) {
    const la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
    if (n < 0) throw bad_bundle(bundle, "entry '" + name + "' is unreadable: " + archive_error_string(a));
    if (n == 0) break;
    total += n;
    if (total > limit)
      throw bad_bundle(bundle, "entry '" + name + "' holds more than the " + std::to_string(limit) +
                                   " bytes it declares");
    h.update(buf.data(), static_cast<size_t>(n));
    if (out) out->write(buf.data(), n);
    if (text) text->append(buf.data(), static_cast<size_t>(n));
  }
  if (total != limit)
    throw bad_bundle(bundle, "entry '" + name + "' holds " + std::to_string(total) + " bytes, bundle.json says " +
                                 std::to_string(limit));
  return h.hex_digest();
}

// The first entry: bundle.json, read into memory and planned from.
Plan read_index_entry(const fs::path& bundle, archive* a) {
  archive_entry* e = nullptr;
  const int rc = archive_read_next_header(a, &e);
  if (rc == ARCHIVE_EOF) throw bad_bundle(bundle, "no bundle.json in it (the archive is empty)");
  if (rc != ARCHIVE_OK) throw bad_bundle(bundle, std::string("unreadable archive: ") + archive_error_string(a));
  const char* raw = archive_entry_pathname(e);
  const std::string name = raw ? raw : "";
  if (name != kBundleIndexName)
    throw bad_bundle(bundle, "no bundle.json as its first entry (the first is '" + name +
                                 "'); the index is read before anything is written");
  if (archive_entry_filetype(e) != AE_IFREG)
    throw bad_bundle(bundle, "entry 'bundle.json' is not a regular file (links and devices are refused)");
  const int64_t declared = archive_entry_size(e);
  if (declared < 0 || declared > kMaxIndexBytes)
    throw bad_bundle(bundle, "entry 'bundle.json' is " + std::to_string(declared) + " bytes, over the limit of " +
                                 std::to_string(kMaxIndexBytes));
  std::string text;
  copy_entry(bundle, a, name, declared, nullptr, &text);
  return plan_from_index(bundle, text);
}

// Every other entry: a regular file bundle.json lists, once, of its listed
// size and SHA-256, written into the staging folder.
void extract_listed_entries(const fs::path& bundle, archive* a, const Plan& plan, const fs::path& dir) {
  std::set<std::string> seen;
  archive_entry* e = nullptr;
  for (;;) {
    const int rc = archive_read_next_header(a, &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK) throw bad_bundle(bundle, std::string("unreadable archive: ") + archive_error_string(a));
    const char* raw = archive_entry_pathname(e);
    const std::string name = raw ? raw : "";
    if (archive_entry_filetype(e) == AE_IFDIR) continue;  // folders are implied by the names
    if (archive_entry_filetype(e) != AE_IFREG)
      throw bad_bundle(bundle, "entry '" + name + "' is not a regular file (links and devices are refused)");
    if (!is_allowed_bundle_name(name) || name == kBundleIndexName) {
      throw bad_bundle(bundle, "entry '" + name + "' is " +
                                   (name == kBundleIndexName ? std::string("bundle.json a second time")
                                                             : "not a name a bundle may hold"));
    }
    const auto it = plan.files.find(name);
    if (it == plan.files.end()) throw bad_bundle(bundle, "entry '" + name + "' is not listed in bundle.json");
    if (!seen.insert(name).second) throw bad_bundle(bundle, "entry '" + name + "' appears twice");
    const auto& [sha, size] = it->second;
    if (archive_entry_size(e) != size)
      throw bad_bundle(bundle, "entry '" + name + "' declares " + std::to_string(archive_entry_size(e)) +
                                   " bytes, bundle.json says " + std::to_string(size));
    std::error_code ec;
    const fs::path target = dir / name;
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw Error(ErrorKind::storage, "cannot create " + target.parent_path().string() + ": " + ec.message());
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorKind::storage, "cannot write " + target.string() + ": " + std::strerror(errno));
    const std::string got = copy_entry(bundle, a, name, size, &out, nullptr);
    out.close();
    if (!out) throw Error(ErrorKind::storage, "cannot write " + target.string() + ": " + std::strerror(errno));
    if (got != sha) throw bad_bundle(bundle, "entry '" + name + "' has SHA-256 " + got + ", bundle.json says " + sha);
    // A .so is named by its bytes; a Python source folder by its result's map (check_python_folders).
    if (name.rfind("plugins/", 0) == 0 && !is_bundle_python_entry(name) && name.substr(8, 64) != got)
      throw bad_bundle(bundle, "entry '" + name + "' is named by a SHA-256 its bytes do not have (" + got + ")");
  }
  for (const auto& [name, file] : plan.files)
    if (!seen.count(name)) throw bad_bundle(bundle, "bundle.json lists '" + name + "', which the archive does not hold");
}

// No run twice under two folder names (repeated_run, the leaderboard's rule).
void check_runs_distinct(const fs::path& bundle, const Plan& plan, const fs::path& dir) {
  std::vector<std::pair<std::string, json>> results;
  std::map<std::string, std::string> by_sha;  // result.json SHA-256 -> run folder
  for (const auto& r : plan.index["runs"]) {
    const std::string name = "runs/" + r["dir"].get<std::string>();
    const std::string& sha = plan.files.at(name + "/result.json").first;
    const auto [it, inserted] = by_sha.emplace(sha, name);
    if (!inserted)
      throw bad_bundle(bundle, it->second + " and " + name + " hold the same result.json (SHA-256 " + sha +
                                   "); a run is listed once");
    std::ifstream in(dir / name / "result.json", std::ios::binary);
    try {
      results.emplace_back(name, parse_json_input(in));
    } catch (const JsonInputError&) {
      // verify reports an unreadable result for its run
    }
  }
  if (auto why = repeated_run(results)) throw bad_bundle(bundle, *why);
}

// Each Python mixer's folder holds exactly the sources its runs' results
// record, byte for byte, and is named by them (bundle_python.h): the files
// were hashed against bundle.json as they were written, and bundle.json is
// the submitter's word, so the result (which verify ties to plugin.sha256) decides.
void check_python_folders(const fs::path& bundle, const Plan& plan, const fs::path& dir) {
  for (const auto& [run, python] : plan.python) {
    std::map<std::string, std::string> in_folder;  // relative path -> SHA-256
    const std::string prefix = python.folder() + "/";
    for (const auto& [name, file] : plan.files)
      if (name.rfind(prefix, 0) == 0) in_folder[name.substr(prefix.size())] = file.first;
    json result;
    try {
      std::ifstream in(dir / "runs" / run / "result.json", std::ios::binary);
      result = parse_json_input(in);
    } catch (const JsonInputError& e) {
      throw bad_bundle(bundle, "runs/" + run + "/result.json is not valid JSON (" + e.what() +
                                   "), so the Python sources it names cannot be tied to it");
    }
    if (auto why = python_folder_problem(result, "runs/" + run, python, in_folder)) throw bad_bundle(bundle, *why);
  }
}

}  // namespace

std::optional<std::string> repeated_run(const std::vector<std::pair<std::string, json>>& results) {
  std::map<std::string, std::string> by_digest;
  std::vector<ScoreInput> scored;
  for (const auto& [name, result] : results) {
    const json* digest = json_at(result, {"digest"});
    if (digest && digest->is_string() && !digest->get<std::string>().empty()) {
      const auto [it, inserted] = by_digest.emplace(digest->get<std::string>(), name);
      if (!inserted)
        return it->second + " and " + name + " are the same run (result digest " + digest->get<std::string>() +
               "); pass only one of them";
    }
    ScoreInput in{name, result};
    try {
      check_score_input(in);  // a result the leaderboard cannot read is verify's to report
    } catch (const Error&) {
      continue;
    }
    scored.push_back(std::move(in));
  }
  try {
    aggregate_scores(scored);  // refuses two results of one seed of one entry on one task, naming both
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

json extract_bundle(const fs::path& bundle, const fs::path& dest) {
  Staging st;
  prepare_staging(bundle, dest, st);
  std::unique_ptr<archive, ArchiveReadFree> a(archive_read_new());
  archive_read_support_format_tar(a.get());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_none(a.get());
  if (archive_read_open_filename(a.get(), bundle.c_str(), 1 << 16) != ARCHIVE_OK)
    throw bad_bundle(bundle, std::string("not a tar archive: ") + archive_error_string(a.get()));
  const Plan plan = read_index_entry(bundle, a.get());
  std::error_code ec;
  const auto space = fs::space(st.dir, ec);
  if (!ec && static_cast<uintmax_t>(plan.total) > space.available)
    throw Error(ErrorKind::storage, "bundle " + bundle.string() + " holds " + std::to_string(plan.total) +
                                        " bytes, more than the " + std::to_string(space.available) + " free in " +
                                        st.dir.parent_path().string() + "; free space or choose another --out");
  write_file_atomic(st.dir / kBundleIndexName, plan.text);
  extract_listed_entries(bundle, a.get(), plan, st.dir);
  check_python_folders(bundle, plan, st.dir);
  check_runs_distinct(bundle, plan, st.dir);
  if (fs::exists(dest, ec)) fs::remove(dest, ec);  // the empty folder checked above
  fs::rename(st.dir, dest, ec);
  if (ec) throw Error(ErrorKind::storage, "cannot move the unpacked bundle to " + dest.string() + ": " + ec.message());
  st.keep = true;
  return plan.index;
}

}  // namespace lra::host
