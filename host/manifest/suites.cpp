#include "manifest/suites.h"

#include <algorithm>
#include <string_view>

#include "lra/status.h"
#include "manifest/embedded.h"

namespace lra::host {

const std::vector<SuiteDef>& suite_defs() {
  static const std::vector<SuiteDef> defs = {
      {"lra", "lra-v1", "lra-v1/", "Long Range Arena's six classification tasks (Tay et al. 2021, Table 1)", true,
       {"listops", "text", "retrieval", "image", "pathfinder", "pathx"}},
      {"mqar", "zoology-v1", "zoology-v1/",
       "Zoology's multi-query associative recall against measured state size (Arora et al. 2024)", false, {}},
      {"mad", "mad-v1", "mad-v1/", "the MAD suite's six synthetic tasks (Poli et al. 2024)", false,
       {"mad_recall", "mad_fuzzy_recall", "mad_noisy_recall", "mad_selective_copy", "mad_compression",
        "mad_memorization"}},
  };
  return defs;
}

std::string suite_names() {
  std::string out;
  for (const auto& s : suite_defs()) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

const SuiteDef& find_suite(const std::string& name) {
  for (const auto& s : suite_defs())
    if (s.name == name) return s;
  throw Error(ErrorKind::usage, "unknown suite '" + name + "' (suites: " + suite_names() + ")");
}

std::vector<std::string> suite_tasks(const SuiteDef& suite) {
  constexpr std::string_view ext = ".toml";
  std::vector<std::string> tasks;
  for (const auto& f : embedded_manifests()) {
    const std::string_view name = f.name;
    if (name.size() <= suite.official_dir.size() + ext.size() || name.substr(0, suite.official_dir.size()) != suite.official_dir ||
        name.substr(name.size() - ext.size()) != ext)
      continue;
    const std::string_view stem = name.substr(suite.official_dir.size(), name.size() - suite.official_dir.size() - ext.size());
    if (stem.find('/') == std::string_view::npos) tasks.emplace_back(stem);
  }
  auto rank = [&](const std::string& t) {
    return std::find(suite.order.begin(), suite.order.end(), t) - suite.order.begin();
  };
  std::sort(tasks.begin(), tasks.end(), [&](const std::string& a, const std::string& b) {
    return std::make_pair(rank(a), a) < std::make_pair(rank(b), b);
  });
  return tasks;
}

const SuiteDef* suite_of_task(const std::string& task) {
  for (const auto& s : suite_defs()) {
    const auto tasks = suite_tasks(s);
    if (std::find(tasks.begin(), tasks.end(), task) != tasks.end()) return &s;
  }
  return nullptr;
}

}  // namespace lra::host
