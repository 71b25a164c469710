// Wording shared by the HTML and Markdown pages, and by the Markdown tables
// of `lrahost suite` and `lrahost sweep --collect`.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "leaderboard/scores.h"
#include "leaderboard/suite_sections.h"

namespace lra::host::site {

// "ListOps", "Path-X", ...; a task outside LRA as it is named.
std::string task_title(const std::string& task);

// 36.37 -> "36.37" (the value is already in percent).
std::string percent_text(double percent);

// The options as compact JSON ("" when there are none); invalid UTF-8 replaced.
// Per task, the majority-class rate of the entries' test sets where every
// entry with that task agrees on it (one test set); tasks where they differ
// (e.g. smoke and official runs in the open division) are left out.
std::map<std::string, double> majority_by_task(const std::vector<ScoreEntry>& entries);

std::string options_text(const nlohmann::json& options);

// The marker of a built-in mixer's entry: "✓ LRA reference settings", or
// "✗ not the LRA reference settings (listops: kernel, nb_features)"; "" for
// any other plugin (ScoreEntry::reference).
std::string reference_marker(const ScoreEntry& entry);
// Its tooltip/long form: which table the options were compared with.
std::string reference_detail(const ScoreEntry& entry);

// The number of seeds: "3", or "1–3" when the tasks differ.
std::string seeds_text(const ScoreEntry& entry);
int max_seeds(const ScoreEntry& entry);

// The most bytes of one string from a file the host did not write (a
// result, a re-evaluation report) that the pages publish, before escaping.
inline constexpr std::size_t kMaxNameBytes = 200;   // plugin name, version, task, preset, one override
inline constexpr std::size_t kMaxTextBytes = 1000;  // options, how an entry was made, notes, reasons, paths

// `text` cut to at most `max_bytes` bytes at a UTF-8 character boundary, then "…" added; unchanged when it fits.
std::string bounded(std::string_view text, std::size_t max_bytes);

// The first 12 hex digits of a sha256 ("" stays "").
std::string short_sha(const std::string& sha256);
// The version as shown beside the hash: a Python mixer's version is its
// sources' hash ("py-" + 12 hex digits), so it reads "Python" rather than
// repeating the hash; any other version as it is.
std::string version_label(const std::string& version, const std::string& sha256);

// How far an entry was checked: "checked: digest 3/3 · signed 3/3 (ed25519:…) · re-evaluated 3/3 (by
// ed25519:…) · private set 3/3", then " · re-evaluation unverified 1/3 (unsigned)" when a report was not believed.
std::string checks_text(const ScoreEntry& entry);

// A suite section's heading: "MQAR (zoology-v1)".
std::string suite_heading(const SuiteSection& section);
// Its one line as a sentence: "The MAD suite's six synthetic tasks (Poli et al. 2024)."
std::string suite_what(const SuiteSection& section);
// How a suite task's score was reached: "lr 0.01 · 1 setting · 1 seed · 66048 B at length 1024".
std::string suite_task_detail(const SuiteTaskScore& task);

// The sentence explaining a suite section's numbers.
extern const char* const kSuiteLegend;

// The sentence explaining the numbers, FAIL and the average.
extern const char* const kScoreLegend;

// The sentence explaining the open division's baseline rows (leaderboard --baselines).
extern const char* const kBaselineLegend;

}  // namespace lra::host::site
