#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "bench/bench_report.h"
#include "leaderboard/paper_reference.h"
#include "leaderboard/site.h"
#include "leaderboard/site_html_parts.h"
#include "leaderboard/site_text.h"
#include "plot/svg_text.h"

namespace lra::host {
namespace {

using site_html::h;
using site_html::sort_key;
using site_html::th;

// The page's only script: sorts a table by the clicked header's column.
// Cells without data-sort (FAIL, —) go last in either direction; ties keep
// the rows' original order (data-order).
constexpr const char* kSortScript = R"JS(
(function () {
  function key(row, col) {
    var cell = row.cells[col];
    return cell ? cell.getAttribute('data-sort') : null;
  }
  function sortBy(table, col, th) {
    var now = th.getAttribute('aria-sort');
    var dir = now === 'ascending' ? 'descending' : now === 'descending' ? 'ascending' : th.getAttribute('data-first');
    var numeric = th.getAttribute('data-type') === 'number';
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, col), y = key(b, col), c;
      if (x === null || y === null) {
        c = x === null ? (y === null ? 0 : 1) : -1;
      } else {
        c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        if (dir === 'descending') c = -c;
      }
      return c || (Number(a.getAttribute('data-order')) - Number(b.getAttribute('data-order')));
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(th.parentNode.cells, function (other) { other.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir);
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.board'), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener('click', function () { sortBy(table, col, th); });
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sortBy(table, col, th); }
      });
    });
  });
})();
)JS";

constexpr const char* kStyle = R"CSS(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1b1b1b;
       max-width: 1280px; margin: 2rem auto; padding: 0 1rem; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.2rem; margin-top: 2.2rem; }
p.note, .meta, footer { color: #5a5a5a; font-size: .85rem; }
.scroll { overflow-x: auto; }
table.board { border-collapse: collapse; width: 100%; font-size: .9rem; font-variant-numeric: tabular-nums; }
table.board th, table.board td { padding: .35rem .55rem; border-bottom: 1px solid #e2e2e2; text-align: right;
                                 white-space: nowrap; vertical-align: top; }
table.board th.text, table.board td.text { text-align: left; white-space: normal; }
table.board thead th { background: #f3f4f6; cursor: pointer; user-select: none; position: sticky; top: 0; }
table.board thead th:hover, table.board thead th:focus { background: #e5e7eb; }
table.board thead th[aria-sort=ascending]::after { content: " \25B2"; }
table.board thead th[aria-sort=descending]::after { content: " \25BC"; }
tr.ref td { background: #fbfaf4; color: #6b6450; font-style: italic; }
tr.baseline td { background: #f4f7fb; color: #38465a; }
.badge.baseline { background: #dbe5f1; color: #2c3e57; }
.badge { display: inline-block; font-size: .7rem; font-style: normal; padding: 0 .35rem; margin-left: .3rem;
         border-radius: .6rem; background: #ece6cf; color: #5c5335; }
td.fail { color: #a11; font-weight: 600; }
.refset { font-size: .8rem; white-space: nowrap; }
.refset.yes { color: #176a2c; }
.refset.no { color: #8a4b00; white-space: normal; }
td.avg { font-weight: 600; }
.meta { font-family: ui-monospace, "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; }
ul.invalid { font-size: .9rem; }
ul.invalid li { margin-bottom: .6rem; }
.chart svg { max-width: 100%; height: auto; }
)CSS";

std::string seed_list(const TaskScore& s) {
  std::string out;
  for (std::size_t i = 0; i < s.seeds.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s.seeds[i]) + ": " + site::percent_text(100 * s.accuracies[i]);
  return out;
}

// One <tr>, with where it stands before any sorting.
struct Row {
  std::optional<double> average;  // percent
  bool reference = false;         // a paper row
  bool baseline = false;          // a built-in measured by this host (leaderboard --baselines): after the entries
  std::string cells;              // the <td>s
};

Row entry_row(const ScoreEntry& e, std::optional<int> rank, const std::vector<std::string>& tasks,
              bool baseline = false) {
  Row row;
  row.baseline = baseline;
  if (e.lra_average) row.average = 100 * *e.lra_average;
  std::string& c = row.cells;
  c += rank ? "<td data-sort=\"" + std::to_string(*rank) + "\">" + std::to_string(*rank) + "</td>" : "<td>—</td>";
  c += site_html::model_cell(e, baseline);
  const int seeds = site::max_seeds(e);
  c += "<td data-sort=\"" + std::to_string(seeds) + "\">" + h(site::seeds_text(e)) + "</td>";
  for (const auto& t : tasks) {
    const auto it = e.tasks.find(t);
    if (it == e.tasks.end()) {
      c += "<td>—</td>";
      continue;
    }
    const TaskScore& s = it->second;
    const std::string title = " title=\"seeds " + seed_list(s) + "; " + std::to_string(s.test_examples) +
                              " test examples; p(above chance) = " + svg::fixed(s.p_above_chance, 4) + "\"";
    if (s.fail)
      c += "<td class=\"fail\"" + title + ">FAIL</td>";
    else
      c += "<td data-sort=\"" + sort_key(100 * s.mean) + "\"" + title + ">" + h(format_task_cell(e, t)) + "</td>";
  }
  c += row.average ? "<td class=\"avg\" data-sort=\"" + sort_key(*row.average) + "\">" +
                         site::percent_text(*row.average) + "</td>"
                   : "<td class=\"avg\">—</td>";
  return row;
}

}  // namespace

std::string site_html::model_cell(const ScoreEntry& e, bool baseline) {
  const std::string version = site::version_label(e.plugin_version, e.plugin_sha256);
  std::string meta = version.empty() ? "" : version == "Python" ? version : "v" + version;
  if (!e.plugin_sha256.empty()) meta += (meta.empty() ? "" : " · ") + std::string("sha256 ") + site::short_sha(e.plugin_sha256);
  const std::string options = site::options_text(e.options);
  if (!options.empty()) meta += (meta.empty() ? "" : " · ") + options;
  if (!e.made_with.empty()) meta += (meta.empty() ? "" : " · ") + e.made_with;
  std::string c = "<td class=\"text model\" data-sort=\"" + h(e.plugin) + "\"><span class=\"name\">" + h(e.plugin) + "</span>";
  if (baseline)
    c += "<span class=\"badge baseline\" title=\"a built-in mixer measured by this host; verified, not ranked\">"
         "baseline</span>";
  if (e.reference)
    c += " <span class=\"refset " + std::string(e.reference->used ? "yes" : "no") + "\" title=\"" +
         h(site::reference_detail(e)) + "\">" + h(site::reference_marker(e)) + "</span>";
  if (!meta.empty()) c += "<div class=\"meta\" title=\"sha256 " + h(e.plugin_sha256) + "\">" + h(meta) + "</div>";
  for (const auto& note : e.notes) c += "<div class=\"meta note\">" + h(note) + "</div>";
  c += "<div class=\"meta checks\" title=\"digest: the file is intact and passed verify; signed: by a key whose "
       "signature verifies; re-evaluated: the submitted weights reproduce the accuracy (verify --reevaluate, in a report "
       "signed by a trusted verifier key); private set: scored on a fresh private test set without a significant gap; "
       "re-evaluated by its author: the same check, signed by the author key of whoever built this page (verify "
       "--reevaluate --sign-as-author), shown but not counted as a trusted verifier's; "
       "re-evaluation unverified: a report that is unsigned, signed by an unknown key or edited, not counted; data not "
       "checked: closed results on LRA's release files that no trusted re-evaluation compared with the maintainer's "
       "own copy (verify alone checks release files by their counts)\">" + h(site::checks_text(e)) + "</div>";
  c += "</td>";
  return c;
}

namespace {

Row paper_row(const PaperRow& p, const std::vector<std::string>& tasks, const char* badge = "LRA paper") {
  Row row;
  row.reference = true;
  row.average = p.average_percent;
  std::string& c = row.cells;
  c += "<td>—</td><td class=\"text model\" data-sort=\"" + h(p.model) + "\"><span class=\"name\">" + h(p.model) +
       "</span><span class=\"badge\">" + badge + "</span></td><td>—</td>";
  for (const auto& t : tasks) {
    const auto it = p.accuracy_percent.find(t);
    if (it != p.accuracy_percent.end())
      c += "<td data-sort=\"" + sort_key(it->second) + "\">" + site::percent_text(it->second) + "</td>";
    else if (t == "pathx")
      c += "<td class=\"fail\">FAIL</td>";
    else
      c += "<td>—</td>";
  }
  c += "<td class=\"avg\" data-sort=\"" + sort_key(p.average_percent) + "\">" + site::percent_text(p.average_percent) +
       "</td>";
  return row;
}

// A table of rows, best average first (rows without one last), sortable by any column.
// `majority`: a last row (<tfoot>, outside the sorting) with each task's majority-class rate (none when empty).
void board_table(std::string& s, const char* id, std::vector<Row> rows, const std::vector<std::string>& tasks,
                 const std::map<std::string, double>& majority = {}) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.baseline != b.baseline) return b.baseline;  // the division's own entries first
    if (a.average.has_value() != b.average.has_value()) return a.average.has_value();
    return a.average && *a.average > *b.average;
  });
  s += "<div class=\"scroll\"><table class=\"board\" id=\"" + std::string(id) + "-table\">\n<thead><tr>" +
       th("#", "number", "ascending") + th("Model", "text", "ascending") + th("Seeds", "number", "descending");
  for (const auto& t : tasks) s += th(site::task_title(t), "number", "descending");
  s += th("Avg", "number", "descending", " aria-sort=\"descending\"") + "</tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < rows.size(); ++i)
    s += std::string("<tr class=\"") + (rows[i].reference ? "ref" : rows[i].baseline ? "baseline" : "entry") +
         "\" data-order=\"" + std::to_string(i) +
         "\">" + rows[i].cells + "</tr>\n";
  s += "</tbody>\n";
  if (!majority.empty()) {
    // In <tfoot>, after the body: sorting moves only the body's rows.
    s += "<tfoot><tr class=\"majority\"><td>—</td><td class=\"text model\">majority class <span class=\"meta\">"
         "(always answering the test set's most common class)</span></td><td>—</td>";
    for (const auto& t : tasks) {
      const auto it = majority.find(t);
      s += it == majority.end() ? "<td>—</td>" : "<td>" + site::percent_text(100 * it->second) + "</td>";
    }
    s += "<td class=\"avg\">—</td></tr></tfoot>\n";
  }
  s += "</table></div>\n";
}

// A division's own entries, then its baselines (built-ins measured by this
// host, unranked): the paper's rows are a separate block (reference_section),
// never among runs of another protocol.
void division_table(std::string& s, const char* id, const char* title, const char* what,
                    const std::vector<ScoreEntry>& entries, const std::vector<std::string>& tasks,
                    const std::vector<ScoreEntry>& baselines = {}) {
  s += std::string("<section id=\"") + id + "\">\n<h2>" + title + "</h2>\n<p class=\"note\">" + what + " " +
       std::to_string(entries.size()) + (entries.size() == 1 ? " entry." : " entries.");
  if (!baselines.empty()) s += std::string(" ") + site::kBaselineLegend;
  s += "</p>\n";
  if (entries.empty() && baselines.empty()) {
    s += "<p class=\"note\">No results.</p>\n</section>\n";
    return;
  }
  std::vector<Row> rows;
  const auto ranks = average_ranks(entries);
  for (std::size_t i = 0; i < entries.size(); ++i) rows.push_back(entry_row(entries[i], ranks[i], tasks));
  for (const auto& b : baselines) rows.push_back(entry_row(b, std::nullopt, tasks, true));
  std::vector<ScoreEntry> all = entries;
  all.insert(all.end(), baselines.begin(), baselines.end());
  board_table(s, id, std::move(rows), tasks, site::majority_by_task(all));
  s += "</section>\n";
}

// The LRA paper's Table 1, in its own labelled block after the divisions.
void reference_section(std::string& s, const std::vector<std::string>& tasks) {
  s += "<section id=\"paper\">\n<h2>Reference: LRA paper, Table 1</h2>\n<p class=\"note\">Tay et al., ICLR 2021, "
       "averages as printed. Measured under LRA's official protocol: comparable with the closed division, not with "
       "open entries run under other presets or overrides.</p>\n";
  std::vector<Row> rows;
  for (const auto& p : paper_table1()) rows.push_back(paper_row(p, tasks));
  board_table(s, "paper", std::move(rows), tasks);
  s += "</section>\n";
}

// The self-pretraining paper's rows, in their own block after its division.
void spt_reference_section(std::string& s, const std::vector<std::string>& tasks) {
  s += std::string("<section id=\"spt-paper\">\n<h2>Reference: Never Train from Scratch</h2>\n<p class=\"note\">") +
       h(kSptPaperSource) +
       ". Their own backbones and tuned settings: for orientation beside the self-pretrained division, not ranked "
       "with it.</p>\n";
  std::vector<Row> rows;
  for (const auto& p : spt_paper_rows()) rows.push_back(paper_row(p, tasks, "SPT paper"));
  board_table(s, "spt-paper", std::move(rows), tasks);
  s += "</section>\n";
}

void invalid_section(std::string& s, const std::vector<InvalidResult>& invalid) {
  if (invalid.empty()) return;
  s += "<section id=\"invalid\">\n<h2>Invalid results (not ranked)</h2>\n<p class=\"note\">Each file failed "
       "<code>lrahost verify</code> or a trusted verifier's re-evaluation (<code>verify --reevaluate</code>), as "
       "marked; each reason is the check's own.</p>\n<ul class=\"invalid\">\n";
  for (const auto& r : invalid) {
    s += "<li><span class=\"meta\">" + h(r.source) + "</span><br><strong>failed " + h(r.failed) + "</strong>: " +
         (r.plugin.empty() ? "?" : h(r.plugin)) + " on " + (r.task.empty() ? "?" : h(r.task)) +
         (r.claimed_division.empty() ? "" : " (claimed " + h(r.claimed_division) + ")") + "<ul>";
    for (const auto& why : r.reasons) s += "<li>" + h(why) + "</li>";
    s += "</ul></li>\n";
  }
  s += "</ul>\n</section>\n";
}

void chart_section(std::string& s, const Leaderboard& board) {
  if (board.bench_sources.empty()) return;
  s += "<section id=\"chart\">\n<h2>Speed, accuracy and memory</h2>\n<p class=\"note\">";
  if (board.chart_accuracy_percent.empty())
    s += "No plugin measured by <code>lrahost bench</code> has an LRA average here yet, so this shows speed and "
         "memory against length.";
  else
    s += "x: training steps/s (LRA Text backbone) at each plugin's longest measured length; y: the plugin's LRA "
         "average (its best closed entry, else its best open one); bubble area: peak memory there.";
  s += "</p>\n<div class=\"chart\">\n" + bench::bench_svg(board.bench, board.chart_accuracy_percent) + "</div>\n";
  s += "<p class=\"note\">Measurements: ";
  for (std::size_t i = 0; i < board.bench_sources.size(); ++i) s += (i ? ", " : "") + h(board.bench_sources[i]);
  s += "</p>\n</section>\n";
}

}  // namespace

std::string leaderboard_html(const Leaderboard& board) {
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
                   h(board.title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<header>\n<h1>" +
                   h(board.title) + "</h1>\n<p class=\"note\">" + site::kScoreLegend +
                   " Click a column header to sort; click again to reverse.</p>\n</header>\n<main>\n";
  division_table(s, "closed", "Closed division",
                 "The official manifests, no overrides: comparable with each other and with the paper.", board.closed,
                 board.task_columns);
  division_table(s, "self-pretrained", "Self-pretrained division",
                 "The official self-pretraining manifests (lra-spt-v1): a pretraining phase on each task's own "
                 "training inputs, then LRA's fine-tuning. Never ranked with results trained from scratch.",
                 board.self_pretrained, board.task_columns);
  spt_reference_section(s, board.task_columns);
  division_table(s, "open", "Open division", "Changed manifests, presets or overrides: each entry's own protocol.",
                 board.open, board.task_columns, board.open_baselines);
  reference_section(s, board.task_columns);
  site_html::suite_sections(s, board);
  invalid_section(s, board.invalid);
  chart_section(s, board);
  s += "</main>\n<footer>\n<p>" + std::to_string(board.result_files) +
       (board.result_files == 1 ? " result file" : " result files") + ", each checked as <code>lrahost verify</code> does. Reference rows: LRA paper Table 1 (Tay et "
       "al., ICLR 2021), averages as printed; Path-X is FAIL for every model there. Generated by " +
       h(board.generator) + ".</p>\n</footer>\n<script>" + kSortScript + "</script>\n</body>\n</html>\n";
  return s;
}

}  // namespace lra::host
