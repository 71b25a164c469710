// index.html's sections of the suites other than LRA (MQAR, MAD): a heading
// per suite, a sortable table per division.
#include <algorithm>
#include <cctype>

#include "leaderboard/site_html_parts.h"
#include "leaderboard/site_text.h"

namespace lra::host {
namespace {

using site_html::h;
using site_html::sort_key;
using site_html::th;

// A task's cell: the score, and under it how it was reached.
std::string task_cell(const SuiteEntry& e, const std::string& task) {
  const auto it = e.tasks.find(task);
  if (it == e.tasks.end()) return "<td>—</td>";
  const SuiteTaskScore& t = it->second;
  std::string c = t.score ? "<td data-sort=\"" + sort_key(100 * *t.score) + "\">" : std::string("<td>");
  return c + suite_score_cell(t.score) + "<div class=\"meta\">" + h(site::suite_task_detail(t)) + "</div></td>";
}

std::string entry_row(const SuiteEntry& e, std::optional<int> rank, const std::vector<std::string>& tasks,
                      bool baseline, std::size_t order) {
  std::string c = std::string("<tr class=\"") + (baseline ? "baseline" : "entry") + "\" data-order=\"" +
                  std::to_string(order) + "\">";
  c += rank ? "<td data-sort=\"" + std::to_string(*rank) + "\">" + std::to_string(*rank) + "</td>" : "<td>—</td>";
  c += site_html::model_cell(e.entry, baseline);
  c += "<td class=\"text\" data-sort=\"" + h(e.model) + "\">" + (e.model.empty() ? "—" : h(e.model)) + "</td>";
  for (const auto& t : tasks) c += task_cell(e, t);
  c += e.score ? "<td class=\"avg\" data-sort=\"" + sort_key(100 * *e.score) + "\">" + suite_score_cell(e.score) + "</td>"
               : "<td class=\"avg\">—</td>";
  return c + "</tr>\n";
}

void division(std::string& s, const SuiteSection& sec, const char* division, const char* title, const char* what,
              const std::vector<SuiteEntry>& entries, const std::vector<SuiteEntry>& baselines) {
  const std::string id = sec.suite + "-" + division;
  s += "<h3 id=\"" + h(id) + "\">" + title + "</h3>\n<p class=\"note\">" + what + " " + std::to_string(entries.size()) +
       (entries.size() == 1 ? " entry." : " entries.");
  if (!baselines.empty()) s += std::string(" ") + site::kBaselineLegend;
  s += "</p>\n";
  if (entries.empty() && baselines.empty()) {
    s += "<p class=\"note\">No results.</p>\n";
    return;
  }
  s += "<div class=\"scroll\"><table class=\"board\" id=\"" + h(id) + "-table\">\n<thead><tr>" +
       th("#", "number", "ascending") + th("Model", "text", "ascending") + th("Model point", "text", "ascending");
  for (const auto& t : sec.tasks) s += th(site::task_title(t), "number", "descending");
  s += th("Score", "number", "descending", " aria-sort=\"descending\"") + "</tr></thead>\n<tbody>\n";
  const auto ranks = suite_ranks(entries);
  std::size_t order = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) s += entry_row(entries[i], ranks[i], sec.tasks, false, order++);
  for (const auto& b : baselines) s += entry_row(b, std::nullopt, sec.tasks, true, order++);
  s += "</tbody>\n</table></div>\n";
}

}  // namespace

void site_html::suite_sections(std::string& s, const Leaderboard& board) {
  for (const auto& sec : board.suites) {
    if (sec.empty()) continue;
    s += "<section id=\"suite-" + h(sec.suite) + "\">\n<h2>" + h(site::suite_heading(sec)) + "</h2>\n<p class=\"note\">" +
         h(site::suite_what(sec)) + " " + site::kSuiteLegend + "</p>\n";
    division(s, sec, "closed", "Closed division", "The suite's official manifests, at a point of their grid.",
             sec.closed, {});
    division(s, sec, "open", "Open division", "Changed manifests, presets or overrides: each entry's own protocol.",
             sec.open, sec.open_baselines);
    s += "</section>\n";
  }
}

}  // namespace lra::host
