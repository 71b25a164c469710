#include "reevaluation/bundle_source.h"

#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "common/python_source_files.h"
#include "common/sha256.h"
#include "lra/status.h"

namespace lra::host {
namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool has_nul(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0)
    if (std::char_traits<char>::find(buf, static_cast<size_t>(in.gcount()), '\0')) return true;
  return false;
}

}  // namespace

std::string bundle_source_folder(const std::string& so_sha256) { return "sources/" + so_sha256; }

bool is_bundle_source_path(const std::string& rel) {
  if (!is_bundle_safe_path(rel)) return false;
  const std::string last = fs::path(rel).filename().string();
  if (last == "CMakeLists.txt") return true;
  for (const char* ext : kSourceExtensions)
    if (ends_with(last, ext)) return true;
  return false;
}

bool is_bundle_source_entry(const std::string& name) {
  static const std::regex folder("sources/[0-9a-f]{64}");
  constexpr size_t kFolder = 8 + 64;
  return name.size() > kFolder + 1 && name[kFolder] == '/' && std::regex_match(name.substr(0, kFolder), folder) &&
         is_bundle_source_path(name.substr(kFolder + 1));
}

SourcePack source_pack(const fs::path& dir, const std::string& so_sha256) {
  auto refuse = [&](const std::string& why) {
    return Error(ErrorKind::usage, "--source " + dir.string() + ": " + why);
  };
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw refuse("not a folder");
  if (!fs::is_regular_file(dir / "CMakeLists.txt", ec))
    throw refuse("no CMakeLists.txt at its top; give the folder that builds the plugin with "
                 "find_package(LraSdk) and lra_add_plugin (docs/writing-a-plugin.md)");
  SourcePack pack;
  int64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), dir).generic_string();
    const std::string name = it->path().filename().string();
    if (it->is_symlink()) {  // a link is no source: its target may lie anywhere
      pack.skipped.push_back(rel);
      continue;
    }
    if (it->is_directory()) {
      // Hidden folders (.git) and build trees are not source.
      if (name.front() == '.' || fs::exists(it->path() / "CMakeCache.txt")) {
        pack.skipped.push_back(rel + "/");
        it.disable_recursion_pending();
      }
      continue;
    }
    if (!it->is_regular_file() || name.front() == '.' || !is_bundle_source_path(rel)) {
      // Not source by its name (or a link): a name with odd characters that
      // looks like source is refused below instead of silently left out.
      bool looks_like_source = name == "CMakeLists.txt";
      for (const char* ext : kSourceExtensions) looks_like_source = looks_like_source || ends_with(name, ext);
      if (looks_like_source && it->is_regular_file() && name.front() != '.')
        throw refuse("'" + rel + "' has a name a bundle cannot carry (at most " +
                     std::to_string(kMaxBundlePythonDepth) + " folders deep, " +
                     std::to_string(kMaxBundlePythonPathBytes) +
                     " bytes of letters, digits, '_', '-' and '.', no part starting with '.'); rename it");
      pack.skipped.push_back(rel);
      continue;
    }
    const auto bytes = static_cast<int64_t>(fs::file_size(it->path()));
    if (bytes > kMaxSourceFileBytes)
      throw refuse("'" + rel + "' is " + std::to_string(bytes) + " bytes, over the " +
                   std::to_string(kMaxSourceFileBytes) + " a bundle carries per source file");
    if (has_nul(it->path()))
      throw refuse("'" + rel + "' holds a NUL byte: a bundle carries source text only, never a binary");
    total += bytes;
    if (total > kMaxSourceFolderBytes || pack.files.size() + 1 > kMaxSourceFiles)
      throw refuse("more than " + std::to_string(kMaxSourceFiles) + " source files or " +
                   std::to_string(kMaxSourceFolderBytes) + " bytes; a bundle carries the plugin's own source only");
    pack.files.push_back({bundle_source_folder(so_sha256) + "/" + rel, it->path(), sha256_file(it->path())});
  }
  if (ec) throw refuse("cannot be listed: " + ec.message());
  return pack;
}

std::string source_folder_sha256(const std::map<std::string, std::string>& files) {
  return sha256_hex(nlohmann::json(files).dump());
}

}  // namespace lra::host
