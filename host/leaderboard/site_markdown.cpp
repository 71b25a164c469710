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

// One table row; `rank` is "1", "—" (no average) or "baseline".
void entry_row(std::string& s, const ScoreEntry& e, const std::string& rank, const std::vector<std::string>& tasks) {
    std::string plugin = text::markdown_cell(e.plugin);
    if (!e.plugin_version.empty())
      plugin += " " + text::markdown_cell(site::version_label(e.plugin_version, e.plugin_sha256));
    if (!e.plugin_sha256.empty()) plugin += " (" + text::markdown_cell(site::short_sha(e.plugin_sha256)) + ")";
    if (e.reference) plugin += " " + text::markdown_cell(site::reference_marker(e));
    if (!e.made_with.empty()) plugin += " (" + text::markdown_cell(e.made_with) + ")";
    for (const auto& note : e.notes) plugin += " — " + text::markdown_cell(note);
    plugin += " — " + text::markdown_cell(site::checks_text(e));
    s += "| " + rank + " | " + plugin + " | " + text::markdown_cell(site::options_text(e.options)) + " | " +
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
