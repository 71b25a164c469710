// bench/report_runs.cpp — see report_runs.h.
#include "bench/report_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "bench/report_json.h"
#include "common/text.h"
#include "rules/rules.h"

namespace lra::host::bench {
namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// A plugin name (from a loadable file) inside a table cell, as the Table 2 tables escape it.
std::string md_text(std::string_view t) { return text::markdown_cell(t, text::MarkdownEscape::backslashes); }

}  // namespace

std::vector<SuiteTotal> suite_totals(const std::vector<TaskRunEstimate>& runs) {
  std::vector<SuiteTotal> totals;
  for (const auto& r : runs) {
    auto it = std::find_if(totals.begin(), totals.end(), [&](const SuiteTotal& t) { return t.plugin == r.plugin; });
    if (it == totals.end()) {
      totals.push_back({r.plugin});
      it = totals.end() - 1;
    }
    const double all_seeds = static_cast<double>(r.seeds) * r.prediction.total_s();
    if (!r.ok()) it->complete = false;
    if (r.task == "pathx") {
      it->pathx = true;
      if (r.ok()) it->pathx_s = all_seeds;
    } else {
      it->tasks.push_back(r.task);
      if (r.ok()) it->lra_tasks_s += all_seeds;
    }
  }
  return totals;
}

nlohmann::json run_estimates_json(const std::vector<TaskRunEstimate>& runs) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : runs) {
    nlohmann::json j = {
        {"plugin", r.plugin},
        {"task", r.task},
        {"preset", r.preset},
        {"manifest", r.manifest},
        {"release", r.release.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.release)},
        {"configuration", r.configuration.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.configuration)},
        {"status", r.ok() ? "ok" : r.train.status},
        {"training", bench_points_json({r.train})[0]},
        {"micro_batch", r.micro_batch},
        {"eval_batch", r.eval_batch},
        {"eval_pass", r.eval_pass},
        {"eval_batches_per_s", r.eval_batches_per_s},
        {"splits", {{"train", r.splits.train}, {"val", r.splits.val}, {"test", r.splits.test}, {"source", r.splits.source}}},
        {"schedule",
         {{"train_steps", r.schedule.train_steps},
          {"validations", r.schedule.validations},
          {"val_batches_each", r.schedule.val_batches_each},
          {"test_batches", r.schedule.test_batches}}},
        {"seeds", r.seeds},
    };
    if (r.pretrain_steps > 0)
      j["pretraining"] = {{"steps", r.pretrain_steps}, {"training", bench_points_json({r.pretrain})[0]}};
    if (r.ok())
      j["predicted_s"] = {{"pretraining", r.prediction.pretrain_s},
                          {"training", r.prediction.train_s},
                          {"evaluation", r.prediction.eval_s},
                          {"one_run", r.prediction.total_s()},
                          {"all_seeds", static_cast<double>(r.seeds) * r.prediction.total_s()}};
    else
      j["predicted_s"] = nullptr;
    rows.push_back(std::move(j));
  }
  nlohmann::json suite = nlohmann::json::array();
  for (const auto& t : suite_totals(runs)) {
    nlohmann::json j = {{"plugin", t.plugin}, {"tasks", t.tasks}, {"complete", t.complete}};
    j["lra_tasks_s"] = t.tasks.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.lra_tasks_s);
    j["pathx_s"] = t.pathx ? nlohmann::json(t.pathx_s) : nlohmann::json(nullptr);
    suite.push_back(std::move(j));
  }
  return {{"schema", "lrahost.bench-runs/v1"}, {"runs", rows}, {"suite", suite}};
}

std::string run_estimates_markdown(const std::vector<TaskRunEstimate>& runs) {
  std::ostringstream md;
  md << "| plugin | task | length | batch | training steps/s | MFU | evaluation batches/s | peak memory | steps "
        "| validations x batches + test | pretraining | training | evaluation | one run | seeds | all seeds |\n"
     << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : runs) {
    const auto& t = r.train;
    const std::string batch = std::to_string(t.batch) + (r.micro_batch > 0 ? " (micro " + std::to_string(r.micro_batch) + ")" : "");
    md << "| " << md_text(r.plugin) << (r.configuration.empty() ? "" : " (" + md_text(r.configuration) + ")") << " | "
       << r.task << " | " << with_commas(t.length) << " | " << batch << " | ";
    if (!r.ok()) {
      const auto& failed = t.status != "ok" ? t : r.pretrain;
      md << (failed.status == "oom" ? "OOM" : "error") << (&failed == &r.pretrain ? " (pretraining)" : "")
         << " | | | | " << with_commas(r.schedule.train_steps) << " | | | | | | " << r.seeds << " | |\n";
      continue;
    }
    const Spread spread = spread_of(t);
    md << fmt("%.3f", t.steps_per_s)
       << (t.repetition_steps_per_s.size() > 1 ? fmt(" [%.3g", spread.min) + fmt("–%.3g]", spread.max) : std::string())
       << (speed_warning(t).empty() ? "" : " ⚠") << " | " << (t.mfu ? fmt("%.1f%%", 100 * *t.mfu) : "-") << " | "
       << fmt("%.2f", r.eval_batches_per_s) << " | " << fmt("%.2f GB", t.peak_memory_bytes / 1e9) << " | "
       << with_commas(r.schedule.train_steps) << " | " << r.schedule.validations << " x " << r.schedule.val_batches_each
       << " + " << r.schedule.test_batches << " | "
       << (r.pretrain_steps > 0 ? human_duration(r.prediction.pretrain_s) + " (" + with_commas(r.pretrain_steps) + " steps at " +
                                      fmt("%.3f", r.pretrain.steps_per_s) + "/s)"
                                : std::string("-"))
       << " | " << human_duration(r.prediction.train_s) << " | "
       << human_duration(r.prediction.eval_s) << " | " << human_duration(r.prediction.total_s()) << " | " << r.seeds
       << " | " << human_duration(static_cast<double>(r.seeds) * r.prediction.total_s()) << " |\n";
  }
  if (!runs.empty()) {
    const auto& t = runs.front().train;
    md << "\n" << t.device << ", " << t.dtype << "; peak memory: " << t.peak_memory_kind
       << "; preset " << runs.front().preset << "; training steps/s: median [min–max] of the repetitions.\n";
  }
  std::string warnings;
  for (const auto& r : runs)
    if (const std::string w = speed_warning(r.train); !w.empty())
      warnings += "- " + md_text(r.plugin) + " on " + r.task + ": " + md_text(w) + "\n";
  if (!warnings.empty())
    md << "\n⚠ **Not a clean measurement** (the predictions rest on speeds whose repetitions should agree within "
       << static_cast<int>(kSpreadWarning * 100) << "% on an otherwise idle machine; measure again before relying on them):\n\n"
       << warnings;
  for (const auto& s : suite_totals(runs)) {
    if (s.tasks.size() + (s.pathx ? 1 : 0) < 2) continue;  // one task: its row says it all
    md << "\n**" << md_text(s.plugin) << ", predicted**: ";
    if (!s.tasks.empty()) {
      md << human_duration(s.lra_tasks_s) << " for ";
      for (size_t i = 0; i < s.tasks.size(); ++i) md << (i ? ", " : "") << s.tasks[i];
      md << " (all trial seeds)";
    }
    if (s.pathx) md << (s.tasks.empty() ? "" : "; ") << human_duration(s.pathx_s) << " for Path-X (all trial seeds)";
    if (!s.tasks.empty() && s.pathx) md << "; " << human_duration(s.lra_tasks_s + s.pathx_s) << " in all";
    md << (s.complete ? "." : " — incomplete: a task's measurement failed and is not counted.") << "\n";
  }
  return md.str();
}

}  // namespace lra::host::bench
