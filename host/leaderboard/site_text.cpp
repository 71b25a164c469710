#include "leaderboard/site_text.h"

#include <optional>

#include <cctype>
#include <cmath>

#include <algorithm>
#include <map>

#include "plot/svg_text.h"

namespace lra::host::site {

std::string task_title(const std::string& task) {
  static const std::map<std::string, std::string> titles = {{"listops", "ListOps"}, {"text", "Text"},
                                                            {"retrieval", "Retrieval"}, {"image", "Image"},
                                                            {"pathfinder", "Pathfinder"}, {"pathx", "Path-X"}};
  const auto it = titles.find(task);
  return it == titles.end() ? task : it->second;
}

std::string percent_text(double percent) { return svg::fixed(percent, 2); }

std::map<std::string, double> majority_by_task(const std::vector<ScoreEntry>& entries) {
  std::map<std::string, std::vector<std::optional<double>>> seen;
  for (const auto& e : entries)
    for (const auto& [task, score] : e.tasks) seen[task].push_back(score.majority_class);
  std::map<std::string, double> out;
  for (const auto& [task, rates] : seen) {
    if (!rates.front()) continue;
    const double first = *rates.front();
    if (std::all_of(rates.begin(), rates.end(),
                    [&](const std::optional<double>& r) { return r && std::fabs(*r - first) < 1e-9; }))
      out[task] = first;
  }
  return out;
}

std::string options_text(const nlohmann::json& options) {
  if (!options.is_object() || options.empty()) return "";
  // "name=value, name=value": spaces after the separators let a page wrap
  // between options, never inside a name or a value.
  std::string out;
  for (const auto& [name, value] : options.items()) {
    const std::string v = value.is_string() ? value.get<std::string>()
                                            : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += (out.empty() ? "" : ", ") + name + "=" + v;
  }
  return out;
}

std::string reference_marker(const ScoreEntry& entry) {
  if (!entry.reference) return "";
  if (entry.reference->used) return "✓ LRA reference settings";
  std::string differs;
  for (const auto& [task, options] : entry.reference->differs) {
    std::string names;
    for (const auto& o : options) names += (names.empty() ? "" : ", ") + o;
    differs += (differs.empty() ? "" : "; ") + task + ": " + names;
  }
  return "✗ not the LRA reference settings (" + differs + ")";
}

std::string reference_detail(const ScoreEntry& entry) {
  if (!entry.reference) return "";
  return std::string(entry.reference->used ? "options equal to" : "options compared with") +
         " the LRA reference settings of each task in " + entry.reference->table +
         " (derived from the recorded options, not from the result's own claim)";
}

int max_seeds(const ScoreEntry& entry) {
  std::size_t most = 0;
  for (const auto& [task, s] : entry.tasks) most = std::max(most, s.accuracies.size());
  return static_cast<int>(most);
}

std::string seeds_text(const ScoreEntry& entry) {
  std::size_t least = SIZE_MAX, most = 0;
  for (const auto& [task, s] : entry.tasks) {
    least = std::min(least, s.accuracies.size());
    most = std::max(most, s.accuracies.size());
  }
  if (most == 0) return "0";
  return least == most ? std::to_string(most) : std::to_string(least) + "–" + std::to_string(most);
}

std::string short_sha(const std::string& sha256) { return sha256.substr(0, 12); }

std::string version_label(const std::string& version, const std::string& sha256) {
  const std::string bare = sha256.rfind("sha256:", 0) == 0 ? sha256.substr(7) : sha256;
  if (version.size() > 3 && version.rfind("py-", 0) == 0 && bare.rfind(version.substr(3), 0) == 0) return "Python";
  return version;
}

std::string bounded(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // not inside a character
  return std::string(text.substr(0, end)) + "…";
}

const char* const kScoreLegend =
    "Test accuracy (%), mean ± sample standard deviation over seeds. Avg: the mean of the five tasks other than "
    "Path-X, shown when all five are present. FAIL: Path-X accuracy not above chance (exact one-sided binomial test "
    "of the correct answers pooled over seeds against 50%, p ≥ 0.05), as the LRA paper marks every model. "
    "✓/✗ LRA reference settings: whether a built-in mixer ran with the options LRA used for Table 1 on every task "
    "(manifests/reference-mixers/); its options column then lists only the options that differ from them.";

std::string suite_heading(const SuiteSection& section) {
  std::string name = section.suite;
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return name + " (" + section.protocol + ")";
}

std::string suite_what(const SuiteSection& section) {
  std::string out = section.what;
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out + ".";
}

std::string suite_task_detail(const SuiteTaskScore& t) {
  auto counted = [](std::size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  std::string out = t.chosen.empty() ? "" : t.chosen + " · ";
  out += counted(static_cast<std::size_t>(t.settings), "setting") + " · " + counted(t.seeds.size(), "seed") + " · " +
         suite_state_text(t);
  if (t.settings > 0 && !t.score) out += " · " + (t.no_score.empty() ? std::string("no score") : t.no_score);
  return out;
}

const char* const kSuiteLegend =
    "Per task: test accuracy (%) at the training point (learning rate, weight decay) chosen on validation accuracy "
    "for each model point and setting, the mean over the task's settings; under it the chosen point, how many "
    "settings and seeds, and the decoding state of the chosen runs as the host measured it, at the longest length "
    "measured. Score: the mean over the suite's tasks, shown when every task has one; entries are ranked by it.";

const char* const kBaselineLegend =
    "Rows marked baseline, after the entries: lrahost's built-in mixers measured by this host, each result verified "
    "like an entry's and not ranked; compare an entry only with a baseline made the same way (the preset and "
    "overrides under each name).";

std::string checks_text(const ScoreEntry& e) {
  const auto& c = e.checks;
  const std::string of = "/" + std::to_string(c.results);
  std::string signers;
  for (const auto& k : c.signers) signers += (signers.empty() ? "" : ", ") + k;
  std::string verifiers, unverified;
  for (const auto& k : c.verifiers) verifiers += (verifiers.empty() ? "" : ", ") + k;
  for (const auto& why : c.unverified_reasons) unverified += (unverified.empty() ? "" : "; ") + why;
  return "checked: digest " + std::to_string(c.results) + of + " · signed " + std::to_string(c.signed_results) + of +
         (signers.empty() ? "" : " (" + signers + ")") + " · re-evaluated " + std::to_string(c.reevaluated) + of +
         (verifiers.empty() ? "" : " (by " + verifiers + ")") + " · private set " + std::to_string(c.private_checked) +
         of +
         (c.reevaluated_by_author == 0 ? ""
                                        : " · re-evaluated by its author " + std::to_string(c.reevaluated_by_author) + of +
                                              " (not a trusted verifier)") +
         (c.reevaluation_unverified == 0
              ? ""
              : " · re-evaluation unverified " + std::to_string(c.reevaluation_unverified) + of + " (" + unverified +
                    ")") +
         (c.data_not_checked == 0 ? "" : " · data not checked " + std::to_string(c.data_not_checked) + of);
}

}  // namespace lra::host::site
