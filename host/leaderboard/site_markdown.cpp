#include <string_view>

#include "common/text.h"
#include "leaderboard/paper_reference.h"
#include "leaderboard/site.h"
#include "leaderboard/site_text.h"
#include "plot/svg_text.h"

namespace lra::host {
namespace {

void header(std::string& s, const std::vector<std::string>& first, const std::vector<std::string>& tasks) {
  std::string rule;
  s += "|";
  for (const auto& h : first) {
    s += " " + h + " |";
    rule += h == "plugin" || h == "model" || h == "options" ? "---|" : "---:|";  // text left, numbers right
  }
  for (const auto& t : tasks) {
    s += " " + text::markdown_cell(site::task_title(t)) + " |";
    rule += "---:|";
  }
  s += " Avg |\n|" + rule + "---:|\n";
}

// The plugin cell: name, version, hash, reference marker, how it was made, notes, checks.
std::string plugin_text(const ScoreEntry& e) {
  std::string plugin = text::markdown_cell(e.plugin);
  if (!e.plugin_version.empty())
    plugin += " " + text::markdown_cell(site::version_label(e.plugin_version, e.plugin_sha256));
  if (!e.plugin_sha256.empty()) plugin += " (" + text::markdown_cell(site::short_sha(e.plugin_sha256)) + ")";
  if (e.reference) plugin += " " + text::markdown_cell(site::reference_marker(e));
  if (!e.made_with.empty()) plugin += " (" + text::markdown_cell(e.made_with) + ")";
  for (const auto& note : e.notes) plugin += " — " + text::markdown_cell(note);
  return plugin + " — " + text::markdown_cell(site::checks_text(e));
}

// One table row; `rank` is "1", "—" (no average) or "baseline".
void entry_row(std::string& s, const ScoreEntry& e, const std::string& rank, const std::vector<std::string>& tasks) {
  s += "| " + rank + " | " + plugin_text(e) + " | " + text::markdown_cell(site::options_text(e.options)) + " | " +
       site::seeds_text(e) + " |";
  for (const auto& t : tasks) s += " " + format_task_cell(e, t) + " |";
  s += " " + format_average_cell(e) + " |\n";
}

// A division's entries, ranked, then its baselines (leaderboard --baselines), then the majority-class row.
void division(std::string& s, const char* title, const char* what, const std::vector<ScoreEntry>& entries,
              const std::vector<std::string>& tasks, const std::vector<ScoreEntry>& baselines = {}) {
  s += std::string("\n## ") + title + "\n\n" + what + (baselines.empty() ? "" : std::string(" ") + site::kBaselineLegend) +
       "\n\n";
  if (entries.empty() && baselines.empty()) {
    s += "No results.\n";
    return;
  }
  header(s, {"rank", "plugin", "options", "seeds"}, tasks);
  const auto ranks = average_ranks(entries);
  for (std::size_t i = 0; i < entries.size(); ++i)
    entry_row(s, entries[i], ranks[i] ? std::to_string(*ranks[i]) : std::string("—"), tasks);
  for (const auto& b : baselines) entry_row(s, b, "baseline", tasks);
  // The bar to beat: always answering each test set's most common class.
  std::vector<ScoreEntry> all = entries;
  all.insert(all.end(), baselines.begin(), baselines.end());
  const auto majority = site::majority_by_task(all);
  if (!majority.empty()) {
    s += "| — | majority class | | |";
    for (const auto& t : tasks) {
      const auto it = majority.find(t);
      s += " " + (it == majority.end() ? std::string("—") : site::percent_text(100 * it->second)) + " |";
    }
    s += " — |\n";
  }
}

// A paper's rows under a header of the six tasks; `missing` fills a task the row has no number for.
void paper_rows(std::string& s, const std::vector<PaperRow>& rows, const std::string& missing) {
  header(s, {"model"}, lra_task_order());
  for (const auto& row : rows) {
    s += "| " + text::markdown_cell(row.model) + " |";
    for (const auto& t : lra_task_order()) {
      const auto it = row.accuracy_percent.find(t);
      s += " " + (it == row.accuracy_percent.end() ? missing : site::percent_text(it->second)) + " |";
    }
    s += " " + site::percent_text(row.average_percent) + " |\n";
  }
}

// A suite section's division: rank, plugin, options, model point, each task (score and how), the score.
void suite_division(std::string& s, const SuiteSection& sec, const char* title, const char* what,
                    const std::vector<SuiteEntry>& entries, const std::vector<SuiteEntry>& baselines) {
  s += std::string("\n### ") + title + "\n\n" + what + (baselines.empty() ? "" : std::string(" ") + site::kBaselineLegend) +
       "\n\n";
  if (entries.empty() && baselines.empty()) {
    s += "No results.\n";
    return;
  }
  s += "| rank | plugin | options | model point |";
  std::string rule = "---|---|---|---|";
  for (const auto& t : sec.tasks) {
    s += " " + text::markdown_cell(site::task_title(t)) + " |";
    rule += "---:|";
  }
  s += " Score |\n|" + rule + "---:|\n";
  auto row = [&](const SuiteEntry& e, const std::string& rank) {
    s += "| " + rank + " | " + plugin_text(e.entry) + " | " + text::markdown_cell(site::options_text(e.entry.options)) +
         " | " + (e.model.empty() ? std::string("—") : text::markdown_cell(e.model)) + " |";
    for (const auto& t : sec.tasks) {
      const auto it = e.tasks.find(t);
      s += it == e.tasks.end() ? std::string(" — |")
                               : " " + suite_score_cell(it->second.score) + " (" +
                                     text::markdown_cell(site::suite_task_detail(it->second)) + ") |";
    }
    s += " " + suite_score_cell(e.score) + " |\n";
  };
  const auto ranks = suite_ranks(entries);
  for (std::size_t i = 0; i < entries.size(); ++i) row(entries[i], ranks[i] ? std::to_string(*ranks[i]) : "—");
  for (const auto& b : baselines) row(b, "baseline");
}

void suite_sections(std::string& s, const Leaderboard& board) {
  for (const auto& sec : board.suites) {
    if (sec.empty()) continue;
    s += "\n## " + text::markdown_cell(site::suite_heading(sec)) + "\n\n" + text::markdown_cell(site::suite_what(sec)) + " " +
         site::kSuiteLegend + "\n";
    suite_division(s, sec, "Closed division", "The suite's official manifests, at a point of their grid.", sec.closed, {});
    suite_division(s, sec, "Open division", "Changed manifests, presets or overrides: each entry's own protocol.",
                   sec.open, sec.open_baselines);
  }
}

}  // namespace

std::string leaderboard_markdown(const Leaderboard& board) {
  std::string s = "# " + text::markdown_cell(board.title) + "\n\n" + site::kScoreLegend + "\n";
  division(s, "Closed division", "The official manifests, no overrides: comparable with each other and with the paper.",
           board.closed, board.task_columns);
  division(s, "Self-pretrained division",
           "The official self-pretraining manifests (lra-spt-v1): a pretraining phase on each task's own training "
           "inputs, then LRA's fine-tuning. Never ranked with results trained from scratch.",
           board.self_pretrained, board.task_columns);
  s += "\n### Reference: Never Train from Scratch\n\n" + std::string(kSptPaperSource) + ".\n\n";
  paper_rows(s, spt_paper_rows(), "—");
  division(s, "Open division", "Changed manifests, presets or overrides: each entry's own protocol.", board.open,
           board.task_columns, board.open_baselines);

  s += "\n## Reference: LRA paper, Table 1\n\nTay et al., ICLR 2021; averages as printed.\n\n";
  paper_rows(s, paper_table1(), "FAIL");  // Path-X: every model FAILs in the LRA paper
  suite_sections(s, board);

  if (!board.invalid.empty()) {
    s += "\n## Invalid results (not ranked)\n\n";
    for (const auto& r : board.invalid) {
      s += "- " + text::markdown_cell(r.source) + ": failed " + r.failed + ": " +
           (r.plugin.empty() ? "?" : text::markdown_cell(r.plugin)) + " on " +
           (r.task.empty() ? "?" : text::markdown_cell(r.task)) + "\n";
      for (const auto& why : r.reasons) s += "  - " + text::markdown_cell(why) + "\n";
    }
  }
  s += "\n" + std::to_string(board.result_files) + (board.result_files == 1 ? " result file" : " result files") +
       ", each checked as lrahost verify does; generated by " + text::markdown_cell(board.generator) + ".\n";
  return s;
}

}  // namespace lra::host
