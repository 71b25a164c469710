// Expanding verify's command-line arguments into the result files they name.
#include <algorithm>
#include <set>
#include <system_error>

#include "lra/status.h"
#include "results/result.h"
#include "results/verify.h"

namespace lra::host {

std::vector<std::filesystem::path> collect_result_files(const std::vector<std::filesystem::path>& args) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(p, ec);
    if (ec) key = p.lexically_normal();
    if (seen.insert(key).second) out.push_back(p);
  };
  for (const fs::path& arg : args) {
    std::error_code ec;
    const fs::file_status st = fs::status(arg, ec);
    if (!fs::exists(st)) {
      throw lra::Error(lra::ErrorKind::usage,
                       "no such file or directory: '" + arg.string() +
                           "' (give result.json files or folders that contain them)");
    }
    if (!fs::is_directory(st)) {
      add(arg);
      continue;
    }
    std::vector<fs::path> found;
    fs::recursive_directory_iterator it(arg, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code fec;
      if (it->path().filename() == kResultFileName && it->is_regular_file(fec)) found.push_back(it->path());
    }
    if (ec) {
      throw lra::Error(lra::ErrorKind::usage,
                       "cannot list '" + arg.string() + "': " + ec.message());
    }
    if (found.empty()) {
      throw lra::Error(lra::ErrorKind::usage,
                       "no " + std::string(kResultFileName) + " found under '" + arg.string() + "'");
    }
    std::sort(found.begin(), found.end());
    for (const auto& p : found) add(p);
  }
  return out;
}

}  // namespace lra::host
