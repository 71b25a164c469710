#include "runs/suite_grid.h"

#include <cmath>
#include <cstdio>

#include "common/text.h"
#include "leaderboard/site_text.h"

namespace lra::host {
namespace {

using nlohmann::json;

std::string short_name(const std::string& axis) { return axis.substr(axis.find('.') + 1); }
bool is_model_axis(const std::string& axis) { return axis.rfind("model.", 0) == 0; }

std::string label(const GridPoint& p, bool model) {
  std::vector<std::string> parts;
  for (const auto& [axis, value] : p.values)
    if (is_model_axis(axis) == model) parts.push_back(short_name(axis) + " " + value);
  return text::join(parts, ", ");
}

// Accuracy in % with two decimals, as the leaderboard and the suite's scores table write it.
std::string percent(double fraction) { return site::percent_text(100 * fraction); }

// The point's label from a run record's "point" object, for the axes of one kind.
std::string record_label(const json& point, bool model) {
  std::vector<std::string> parts;
  for (const auto& [axis, value] : point.items())
    if (is_model_axis(axis) == model) parts.push_back(short_name(axis) + " " + value.get<std::string>());
  return text::join(parts, ", ");
}

// A map that keeps its keys in insertion order: runs are recorded in the
// grid's order, and the tables keep it (64 before 128, not after).
template <class V>
struct Ordered {
  std::vector<std::pair<std::string, V>> items;
  V& operator[](const std::string& k) {
    for (auto& [key, v] : items)
      if (key == k) return v;
    return items.emplace_back(k, V{}).second;
  }
};

}  // namespace

std::vector<std::string> GridPoint::sets() const {
  std::vector<std::string> out;
  for (const auto& [axis, value] : values) out.push_back(axis + "=" + value);
  return out;
}

std::string GridPoint::folder() const {
  std::vector<std::string> parts;
  for (const auto& [axis, value] : values) parts.push_back(short_name(axis) + "-" + value);
  return text::join(parts, "_");
}

std::string GridPoint::model_label() const { return label(*this, true); }
std::string GridPoint::train_label() const { return label(*this, false); }

std::string grid_value_text(double v) {
  const bool whole = v == std::floor(v) && std::fabs(v) < 1e15;
  return whole ? std::to_string(static_cast<int64_t>(v)) : json(v).dump();
}

std::vector<GridPoint> grid_points(const Manifest& m) {
  std::vector<GridPoint> points = {GridPoint{}};
  for (const auto& axis : m.grid) {
    std::vector<GridPoint> next;
    for (const auto& p : points)
      for (double v : axis.values) {
        GridPoint q = p;
        q.values.emplace_back(axis.key, grid_value_text(v));
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  return points;
}

json select_grid_points(const json& runs) {
  // task -> setting -> model label -> train label -> the runs there
  Ordered<Ordered<Ordered<Ordered<std::vector<const json*>>>>> groups;
  for (const auto& r : runs) {
    const std::string setting = r.contains("setting") && r["setting"].is_string() ? r["setting"].get<std::string>() : "";
    const json point = r.contains("point") && r["point"].is_object() ? r["point"] : json::object();
    groups[r["task"].get<std::string>()][setting][record_label(point, true)][record_label(point, false)].push_back(&r);
  }
  json out = json::array();
  for (const auto& [task, settings] : groups.items)
    for (const auto& [setting, models] : settings.items)
      for (const auto& [model, trains] : models.items) {
        json best = nullptr;
        json candidates = json::array();
        double best_val = -1;
        for (const auto& [train, rs] : trains.items) {
          double val = 0, test = 0;
          int n = 0;
          json dirs = json::array();
          for (const json* r : rs) {
            dirs.push_back((*r)["run_dir"]);
            if (!r->contains("best_val_accuracy") || !r->contains("test_accuracy")) continue;
            val += (*r)["best_val_accuracy"].get<double>();
            test += (*r)["test_accuracy"].get<double>();
            ++n;
          }
          json c = {{"train", train}, {"finished", n}, {"runs", static_cast<int64_t>(rs.size())}, {"run_dirs", dirs}};
          if (n > 0) {
            c["val_accuracy"] = val / n;
            c["test_accuracy"] = test / n;
            // Ties keep the first point in the grid's order.
            if (val / n > best_val) best_val = val / n, best = c;
          }
          candidates.push_back(std::move(c));
        }
        out.push_back({{"task", task},
                       {"setting", setting},
                       {"model", model},
                       {"selected", best},
                       {"candidates", candidates}});
      }
  return out;
}

json task_scores(const json& selections) {
  // task -> model -> the chosen test accuracies of its settings (null: none finished)
  Ordered<Ordered<std::vector<const json*>>> by_task;
  for (const auto& s : selections) by_task[s["task"].get<std::string>()][s["model"].get<std::string>()].push_back(&s);
  json out = json::array();
  for (const auto& [task, models] : by_task.items)
    for (const auto& [model, sels] : models.items) {
      double sum = 0;
      int scored = 0;
      for (const json* s : sels)
        if (!(*s)["selected"].is_null()) sum += (*s)["selected"]["test_accuracy"].get<double>(), ++scored;
      const int settings = static_cast<int>(sels.size());
      out.push_back({{"task", task},
                     {"model", model},
                     {"settings", settings},
                     {"unfinished_settings", settings - scored},
                     {"score", scored == settings ? json(sum / settings) : json(nullptr)}});
    }
  return out;
}

std::string grid_selection_markdown(const json& selections) {
  std::string md;
  std::string task;
  bool with_settings = false;
  for (const auto& s : selections) {
    if (s["task"] != task) {
      task = s["task"].get<std::string>();
      with_settings = false;
      for (const auto& t : selections)
        if (t["task"] == s["task"] && !t["setting"].get<std::string>().empty()) with_settings = true;
      md += "\n## " + text::markdown_cell(task) + ": the best training point per " +
            (with_settings ? "setting and model" : "model") + ", chosen on validation\n\n" +
            (with_settings ? "| setting | model | chosen | validation | test | candidates (validation) |\n|---|---|---|---:|---:|---|\n"
                           : "| model | chosen | validation | test | candidates (validation) |\n|---|---|---:|---:|---|\n");
    }
    std::vector<std::string> cands;
    const bool tuned = s["candidates"].size() > 1 || !s["candidates"][0]["train"].get<std::string>().empty();
    for (const auto& c : s["candidates"])
      cands.push_back(c["train"].get<std::string>() + ": " +
                      (c.contains("val_accuracy") ? percent(c["val_accuracy"].get<double>())
                                                  : std::string("no finished run")));
    const json& b = s["selected"];
    const std::string setting = s["setting"].get<std::string>();
    md += std::string("| ") + (with_settings ? text::markdown_cell(setting.empty() ? "baseline" : setting) + " | " : "") +
          text::markdown_cell(s["model"].get<std::string>().empty() ? "-" : s["model"].get<std::string>()) + " | " +
          (b.is_null() ? "none finished" : tuned ? text::markdown_cell(b["train"].get<std::string>()) : "(no training axis)") + " | " +
          (b.is_null() ? "—" : percent(b["val_accuracy"].get<double>())) + " | " +
          (b.is_null() ? "—" : percent(b["test_accuracy"].get<double>())) + " | " +
          (tuned ? text::markdown_cell(text::join(cands, "; ")) : "—") + " |\n";
  }
  // A task's score is the mean over its settings of the chosen test accuracy
  // (MAD's per-task score, analysis.py compute_model_mad_scores); MAD's score
  // the mean over tasks, with one model point per task.
  const json scores = task_scores(selections);
  bool one_model_each = true, multi_setting = false;
  for (size_t i = 1; i < scores.size(); ++i)
    if (scores[i]["task"] == scores[i - 1]["task"]) one_model_each = false;
  for (const auto& t : scores) multi_setting = multi_setting || t["settings"].get<int>() > 1;
  if (multi_setting) {
    md += "\n## Per task: the mean over its settings\n\n| task | model | settings | score |\n|---|---|---:|---:|\n";
    for (const auto& t : scores)
      md += "| " + text::markdown_cell(t["task"].get<std::string>()) + " | " +
            text::markdown_cell(t["model"].get<std::string>().empty() ? "-" : t["model"].get<std::string>()) + " | " +
            std::to_string(t["settings"].get<int>()) + " | " +
            (t["score"].is_null() ? "— (" + std::to_string(t["unfinished_settings"].get<int>()) + " without a finished run)"
                                  : percent(t["score"].get<double>())) +
            " |\n";
  }
  int scored_tasks = 0;
  double sum = 0;
  for (const auto& t : scores)
    if (!t["score"].is_null()) sum += t["score"].get<double>(), ++scored_tasks;
  const int tasks = static_cast<int>(scores.size());
  if (tasks > 1 && one_model_each)
    md += "\n**Mean over the " + std::to_string(tasks) + " tasks** (MAD's score): " +
          (scored_tasks == tasks ? percent(sum / tasks) : std::string("— (a task has no finished run)")) + "\n";
  if (!md.empty())
    md += "\nAccuracy in %, the mean over the point's seeds (a sequence task's: the share of scored positions "
          "right). The training point is chosen on validation accuracy; test is reported at that point only.\n";
  return md;
}

}  // namespace lra::host
