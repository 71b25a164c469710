#include "bench/bench_report.h"
#include "leaderboard/paper_reference.h"
#include "leaderboard/site.h"

namespace lra::host {
namespace {

using nlohmann::json;

json ranked(const std::vector<ScoreEntry>& entries) {
  json out = json::array();
  const auto ranks = average_ranks(entries);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    json e = to_json(entries[i]);
    e["rank"] = ranks[i] ? json(*ranks[i]) : json(nullptr);
    out.push_back(std::move(e));
  }
  return out;
}

// Never ranked: "rank" is null and "baseline" true in each.
json baselines(const std::vector<ScoreEntry>& rows) {
  json out = json::array();
  for (const auto& row : rows) {
    json e = to_json(row);
    e["rank"] = nullptr;
    e["baseline"] = true;
    out.push_back(std::move(e));
  }
  return out;
}

// A suite section: its entries ranked by score, its baselines never.
json suite_json(const SuiteSection& sec) {
  json closed = json::array(), open = json::array(), base = json::array();
  for (auto [entries, out] : {std::pair{&sec.closed, &closed}, std::pair{&sec.open, &open}}) {
    const auto ranks = suite_ranks(*entries);
    for (std::size_t i = 0; i < entries->size(); ++i) {
      json e = to_json((*entries)[i]);
      e["rank"] = ranks[i] ? json(*ranks[i]) : json(nullptr);
      out->push_back(std::move(e));
    }
  }
  for (const auto& row : sec.open_baselines) {
    json e = to_json(row);
    e["rank"] = nullptr;
    e["baseline"] = true;
    base.push_back(std::move(e));
  }
  return {{"suite", sec.suite}, {"protocol", sec.protocol}, {"tasks", sec.tasks},
          {"closed", closed},   {"open", open},             {"open_baselines", base}};
}

}  // namespace

json leaderboard_json(const Leaderboard& board) {
  json invalid = json::array();
  for (const auto& r : board.invalid)
    invalid.push_back({{"source", r.source},
                       {"plugin", r.plugin},
                       {"task", r.task},
                       {"claimed_division", r.claimed_division},
                       {"failed", r.failed},
                       {"reasons", r.reasons}});
  json rows = json::array();
  for (const auto& row : paper_table1())
    rows.push_back({{"plugin", row.plugin},
                    {"model", row.model},
                    {"tasks_percent", row.accuracy_percent},
                    {"pathx", "FAIL"},
                    {"average_percent", row.average_percent}});
  json spt_rows = json::array();
  for (const auto& row : spt_paper_rows())
    spt_rows.push_back({{"plugin", row.plugin},
                        {"model", row.model},
                        {"tasks_percent", row.accuracy_percent},
                        {"average_percent", row.average_percent}});
  json suites = json::array();
  for (const auto& sec : board.suites) suites.push_back(suite_json(sec));
  json bench = nullptr;
  if (!board.bench_sources.empty())
    bench = {{"sources", board.bench_sources},
             {"points", bench::bench_points_json(board.bench)},
             {"chart_accuracy_percent", board.chart_accuracy_percent}};
  return {{"schema", kLeaderboardSchema},
          {"title", board.title},
          {"generator", board.generator},
          {"tasks", board.task_columns},
          {"average_tasks", lra_average_tasks()},
          {"result_files", board.result_files},
          {"closed", ranked(board.closed)},
          {"self_pretrained", ranked(board.self_pretrained)},
          {"open", ranked(board.open)},
          {"open_baselines", baselines(board.open_baselines)},
          {"suites", suites},
          {"invalid", invalid},
          {"reference", {{"source", "LRA paper, Table 1 (Tay et al., ICLR 2021)"}, {"rows", rows}}},
          {"reference_self_pretrained", {{"source", kSptPaperSource}, {"rows", spt_rows}}},
          {"bench", bench}};
}

}  // namespace lra::host
