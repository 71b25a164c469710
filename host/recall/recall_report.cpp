#include "recall/recall_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/text.h"
#include "lra/status.h"
#include "plot/chart.h"

namespace lra::host {

using nlohmann::json;

std::string RecallRun::label() const { return plugin + ", width " + std::to_string(width); }

namespace {

const json& member(const json& j, const std::vector<std::string>& path, const std::string& file) {
  const json* at = &j;
  std::string where;
  for (const auto& k : path) {
    where += (where.empty() ? "" : ".") + k;
    if (!at->is_object() || !at->contains(k))
      throw Error(ErrorKind::data, file + ": " + where + " is missing: not a result lrahost wrote for a sequence task");
    at = &(*at)[k];
  }
  return *at;
}

std::string percent(double x) { return svg::fixed(100 * x, 1) + "%"; }

std::string state_text(const RecallRun& r) {
  return r.state_measured ? text::bytes_text(r.state_bytes) + " at " + std::to_string(r.state_length) : "not measured";
}

// The cell names of the runs of one task, in the order they first appear.
std::vector<std::string> cell_names(const std::vector<const RecallRun*>& runs) {
  std::vector<std::string> names;
  for (const auto* r : runs)
    for (const auto& c : r->cells)
      if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
  return names;
}

}  // namespace

RecallRun read_recall_run(const json& result, const std::string& file) {
  RecallRun r;
  r.file = file;
  if (!result.is_object() || result.value("/metrics/scored"_json_pointer, std::string()) != "position")
    throw Error(ErrorKind::data, file + ": metrics.scored is not \"position\": not a sequence task's result "
                                        "(recall reports read runs of tasks such as mqar)");
  try {
    r.plugin = member(result, {"plugin", "name"}, file).get<std::string>();
    r.task = member(result, {"task", "name"}, file).get<std::string>();
    r.width = member(result, {"config", "model", "d_model"}, file).get<int64_t>();
    r.test_accuracy = member(result, {"metrics", "test_accuracy"}, file).get<double>();
    r.test_example_accuracy = member(result, {"metrics", "test_example_accuracy"}, file).get<double>();
    for (const auto& c : member(result, {"metrics", "test_cells"}, file))
      r.cells.push_back({c.at("name").get<std::string>(), c.at("examples").get<int64_t>(),
                         c.at("positions").get<int64_t>(), c.at("accuracy").get<double>(),
                         c.at("example_accuracy").get<double>()});
    const json& state = member(result, {"state_size"}, file);
    r.state_measured = state.at("measured").get<bool>();
    if (r.state_measured) {
      for (const auto& p : state.at("per_length"))
        if (p.at("length").get<int64_t>() >= r.state_length) {
          r.state_length = p.at("length").get<int64_t>();
          r.state_bytes = p.at("bytes").get<int64_t>();
        }
      if (r.state_length == 0) throw Error(ErrorKind::data, file + ": state_size.per_length is empty");
    } else {
      r.state_why = state.value("why", std::string());
    }
  } catch (const json::exception& e) {
    throw Error(ErrorKind::data, file + ": a member has the wrong type (" + text::first_line(e.what()) + ")");
  }
  return r;
}

std::string recall_markdown(const std::vector<RecallRun>& runs) {
  std::map<std::string, std::vector<const RecallRun*>> by_task;
  for (const auto& r : runs) by_task[r.task].push_back(&r);
  std::string md = "# Recall: accuracy per cell and state size\n\n"
                   "Accuracy is the share of scored positions (queries) answered right; *wholly right* the share "
                   "of examples with every query right. State: the bytes the trained model's mixers keep per "
                   "sequence when decoding, measured by the host at the longest test length (docs/suites.md).\n";
  for (const auto& [task, of_task] : by_task) {
    const auto names = cell_names(of_task);
    for (const bool whole : {false, true}) {
      md += "\n## " + task + ": " + (whole ? "examples wholly right" : "accuracy per cell") + "\n\n| mixer | width | state |";
      for (const auto& n : names) md += " " + n + " |";
      md += " all |\n|---|---:|---:|";
      for (size_t i = 0; i <= names.size(); ++i) md += "---:|";
      md += "\n";
      for (const auto* r : of_task) {
        md += "| `" + r->plugin + "` | " + std::to_string(r->width) + " | " + state_text(*r) + " |";
        for (const auto& n : names) {
          const auto c = std::find_if(r->cells.begin(), r->cells.end(), [&](const RecallCell& x) { return x.name == n; });
          md += " " + (c == r->cells.end() ? std::string("—") : percent(whole ? c->example_accuracy : c->accuracy)) + " |";
        }
        md += " " + percent(whole ? r->test_example_accuracy : r->test_accuracy) + " |\n";
      }
    }
  }
  md += "\nFiles:\n\n";
  for (const auto& r : runs) md += "- `" + r.file + "`" + (r.state_measured ? "" : " (state not measured: " + r.state_why + ")") + "\n";
  return md;
}

std::string recall_svg(const std::vector<RecallRun>& runs, const std::string& title) {
  constexpr double kWidth = 820, kHeight = 480, kLeft = 70, kTop = 60, kBottom = 60, kLegendWidth = 250, kStrip = 70;
  std::vector<double> bytes;
  bool unmeasured = false;
  for (const auto& r : runs) {
    if (r.state_measured) bytes.push_back(static_cast<double>(r.state_bytes));
    else unmeasured = true;
  }
  svg::Panel p;
  p.left = kLeft + (unmeasured ? kStrip : 0);
  p.top = kTop;
  p.right = kWidth - kLegendWidth;
  p.bottom = kHeight - kBottom;
  p.x = svg::value_scale(bytes, 0.08);
  p.y = svg::Scale{false, 0.0, 1.0};
  std::string s;
  svg::open_svg(s, kWidth, kHeight, title);
  svg::page_heading(s, kWidth, title, "test accuracy (share of queries answered) against the measured state");
  svg::draw_grid(s, p, p.x.ticks(), p.y.ticks());
  svg::axis_labels(s, p, std::string("State per sequence at the longest test length, bytes") + (p.x.log ? " (log scale)" : ""),
                   "Test accuracy", 50);
  if (unmeasured)
    s += "<text x=\"" + svg::coord(kLeft + kStrip / 2) + "\" y=\"" + svg::coord(p.bottom + 20) +
         "\" text-anchor=\"middle\" fill=\"#555555\">not measured</text>\n";
  std::vector<std::string> plugins;
  for (const auto& r : runs)
    if (std::find(plugins.begin(), plugins.end(), r.plugin) == plugins.end()) plugins.push_back(r.plugin);
  svg::Legend legend(s, p.right + 20, p.top + 6);
  for (size_t k = 0; k < plugins.size(); ++k) {
    const std::string colour = svg::palette_colour(k, 10);
    for (const auto& r : runs) {
      if (r.plugin != plugins[k]) continue;
      const double y = p.py(r.test_accuracy);
      const std::string tip = r.label() + ": " + percent(r.test_accuracy) + ", state " + state_text(r);
      if (r.state_measured) {
        const double x = p.px(static_cast<double>(r.state_bytes));
        s += svg::circle(x, y, 5, colour, "", tip);
        s += "<text x=\"" + svg::coord(x + 7) + "\" y=\"" + svg::coord(y - 6) + "\" font-size=\"10\" fill=\"#555555\">" +
             std::to_string(r.width) + "</text>\n";
      } else {
        s += svg::failure_mark(kLeft + kStrip / 2, y, 5, colour, tip + " (" + r.state_why + ")");
      }
    }
    legend.dot(colour, svg::Legend::cut(plugins[k], 30));
  }
  legend.gap();
  legend.note("numbers by the points: width");
  s += "</svg>\n";
  return s;
}

}  // namespace lra::host
