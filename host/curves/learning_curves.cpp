#include "curves/learning_curves.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "lra/status.h"
#include "plot/chart.h"

namespace lra::host {
namespace {

using nlohmann::json;
using svg::coord;
using svg::xml_escape;

[[noreturn]] void bad(const std::string& source, const std::string& field, const std::string& why) {
  throw Error(ErrorKind::data, source + ": " + field + " " + why + " (a result.json written by `lrahost run`)");
}

std::optional<double> number_at(const json& h, const char* key, const std::string& source, const std::string& at) {
  if (!h.contains(key) || h[key].is_null()) return std::nullopt;
  if (!h[key].is_number() || !std::isfinite(h[key].get<double>())) bad(source, at + "." + key, "is not a finite number");
  return h[key].get<double>();
}

std::string cell(const std::optional<double>& v) {
  if (!v) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", *v);
  return buf;
}

constexpr double kWidth = 1120, kHeight = 420, kLeft = 64, kTop = 56, kPanelWidth = 330, kPanelGap = 70, kBottom = 52;

// One panel: `train` solid and `val` dashed lines of every curve against the step.
void panel(std::string& s, const svg::Frame& f, const std::vector<LearningCurve>& curves, const std::string& title,
           const std::string& y_label, std::optional<double> ReportPoint::*train,
           std::optional<double> ReportPoint::*val, bool unit_interval,
           std::optional<double> majority) {
  std::vector<double> xs, ys;
  for (const auto& c : curves)
    for (const auto& p : c.points) {
      xs.push_back(static_cast<double>(p.step));
      if (auto v = p.*train) ys.push_back(*v);
      if (auto v = p.*val) ys.push_back(*v);
    }
  if (majority) ys.push_back(*majority);
  svg::Panel p{f, svg::padded_scale(xs, 0.02, 1.0), svg::padded_scale(ys, 0.05, 0.05)};
  if (xs.empty()) p.x = {false, 0, 1};
  if (unit_interval) p.y = {false, std::max(0.0, p.y.lo), std::min(1.0, p.y.hi)};
  svg::draw_grid(s, p, p.x.ticks(), p.y.ticks());
  svg::axis_labels(s, p, "update step", y_label, 48);
  svg::panel_title(s, p, xml_escape(title));
  if (ys.empty()) svg::no_data_note(s, p, "nothing measured");
  if (majority)
    s += "<line class=\"majority\" x1=\"" + coord(p.left) + "\" x2=\"" + coord(p.right) + "\" y1=\"" +
         coord(p.py(*majority)) + "\" y2=\"" + coord(p.py(*majority)) +
         "\" stroke=\"#888\" stroke-width=\"1.5\" stroke-dasharray=\"2,3\"><title>majority-class rate " +
         svg::fixed(100 * *majority, 2) + "%</title></line>\n";
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const std::string colour = svg::palette_colour(i, 10);
    for (const bool is_val : {false, true}) {
      std::string pts;
      int n = 0;
      for (const auto& q : curves[i].points)
        if (const auto v = q.*(is_val ? val : train)) {
          pts += coord(p.px(static_cast<double>(q.step))) + "," + coord(p.py(*v)) + " ";
          ++n;
        }
      if (n == 0) continue;
      pts.pop_back();
      const std::string what = xml_escape(curves[i].label) + (is_val ? ", validation" : ", training");
      if (n == 1) {
        const auto comma = pts.find(',');
        s += svg::circle(std::stod(pts.substr(0, comma)), std::stod(pts.substr(comma + 1)), 3, colour, "", what);
        continue;
      }
      s += std::string("<polyline class=\"") + (is_val ? "val" : "train") + "\" points=\"" + pts +
           "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"" + (is_val ? "2" : "1.5") + "\"" +
           (is_val ? " stroke-dasharray=\"6,3\"" : "") + "><title>" + what + "</title></polyline>\n";
    }
  }
}

}  // namespace

LearningCurve learning_curve(const json& result, const std::string& source, const std::map<int64_t, double>& speeds) {
  if (!result.is_object()) bad(source, "the document", "is not a JSON object");
  const json* history = result.contains("history") ? &result["history"] : nullptr;
  if (!history || !history->is_array()) bad(source, "history", "is missing or not an array");
  LearningCurve c;
  const json& plugin = result.value("plugin", json::object());
  const json& task = result.value("task", json::object());
  c.label = (plugin.is_object() ? plugin.value("name", std::string("?")) : std::string("?")) + " on " +
            (task.is_object() ? task.value("name", std::string("?")) : std::string("?"));
  if (result.contains("seed") && result["seed"].is_number_integer())
    c.label += ", seed " + std::to_string(result["seed"].get<int64_t>());
  int64_t last = 0;
  for (std::size_t i = 0; i < history->size(); ++i) {
    const json& h = (*history)[i];
    const std::string at = "history[" + std::to_string(i) + "]";
    if (!h.is_object() || !h.contains("step") || !h["step"].is_number_integer() || h["step"].get<int64_t>() <= last)
      bad(source, at + ".step", "is missing or not an ascending positive integer");
    ReportPoint p;
    p.step = last = h["step"].get<int64_t>();
    p.lr = number_at(h, "lr", source, at);
    p.train_loss = number_at(h, "train_loss", source, at);
    p.train_accuracy = number_at(h, "train_accuracy", source, at);
    p.val_loss = number_at(h, "val_loss", source, at);
    p.val_accuracy = number_at(h, "val_accuracy", source, at);
    if (const auto it = speeds.find(p.step); it != speeds.end()) p.steps_per_second = it->second;
    c.points.push_back(p);
  }
  if (const json* m = result.contains("metrics") ? &result["metrics"] : nullptr; m && m->is_object()) {
    if (m->contains("majority_class_rate") && (*m)["majority_class_rate"].is_number())
      c.majority_class = (*m)["majority_class_rate"].get<double>();
    if (m->contains("test_accuracy") && (*m)["test_accuracy"].is_number())
      c.test_accuracy = (*m)["test_accuracy"].get<double>();
  }
  return c;
}

LearningCurve pretraining_curve(const json& result, const std::string& source, const std::map<int64_t, double>& speeds) {
  if (!result.is_object() || !result.contains("pretraining") || !result["pretraining"].is_object())
    bad(source, "pretraining", "is missing or not an object (the run was not self-pretrained)");
  const json& phase = result["pretraining"];
  json view = {{"history", phase.value("history", json())}, {"plugin", result.value("plugin", json::object())},
               {"task", result.value("task", json::object())}};
  LearningCurve c = learning_curve(view, source + " (pretraining)", speeds);
  c.label += ", pretraining (" + phase.value("objective", std::string("?")) + ", token accuracy)";
  return c;
}

std::string phases_history_csv(const std::vector<std::pair<std::string, LearningCurve>>& phases) {
  std::string out;
  for (const auto& [phase, curve] : phases) {
    const std::string rows = history_csv(curve);
    const size_t header_end = rows.find('\n') + 1;
    if (out.empty()) out = "phase," + rows.substr(0, header_end);
    for (size_t at = header_end; at < rows.size();) {
      const size_t end = rows.find('\n', at) + 1;
      out += phase + "," + rows.substr(at, end - at);
      at = end;
    }
  }
  return out;
}

std::string history_csv(const LearningCurve& curve) {
  std::string out = "step,lr,train_loss,train_accuracy,val_loss,val_accuracy,steps_per_second\n";
  for (const auto& p : curve.points)
    out += std::to_string(p.step) + "," + cell(p.lr) + "," + cell(p.train_loss) + "," + cell(p.train_accuracy) + "," +
           cell(p.val_loss) + "," + cell(p.val_accuracy) + "," + cell(p.steps_per_second) + "\n";
  return out;
}

std::string curves_svg(const std::vector<LearningCurve>& curves, const std::string& title) {
  std::string s;
  const double legend_rows = static_cast<double>(curves.size()) + 4;
  const double height = std::max(kHeight, kTop + 40 + legend_rows * svg::Legend::kRow);
  svg::open_svg(s, kWidth, height, title);
  svg::page_heading(s, kWidth, xml_escape(title), "training solid, validation dashed");
  // The majority-class line only when every curve has the same one (one task's runs).
  std::optional<double> majority;
  std::set<double> rates;
  for (const auto& c : curves)
    if (c.majority_class) rates.insert(*c.majority_class);
  const bool shared = rates.size() == 1 &&
                      std::all_of(curves.begin(), curves.end(), [](const LearningCurve& c) { return c.majority_class.has_value(); });
  if (shared) majority = *rates.begin();
  const double bottom = kHeight - kBottom;
  const svg::Frame loss{kLeft, kTop + 24, kLeft + kPanelWidth, bottom};
  const svg::Frame acc{loss.right + kPanelGap, kTop + 24, loss.right + kPanelGap + kPanelWidth, bottom};
  panel(s, loss, curves, "loss", "cross-entropy", &ReportPoint::train_loss, &ReportPoint::val_loss, false,
        std::nullopt);
  panel(s, acc, curves, "accuracy", "accuracy", &ReportPoint::train_accuracy,
        &ReportPoint::val_accuracy, true, majority);
  svg::Legend legend(s, acc.right + 24, kTop + 30);
  for (std::size_t i = 0; i < curves.size(); ++i) {
    // A long label (a Python mixer's path) is cut, never the number after it.
    const std::string accuracy =
        curves[i].test_accuracy ? ": test " + svg::fixed(100 * *curves[i].test_accuracy, 2) + "%" : std::string();
    svg::Legend::Text text = svg::Legend::cut(curves[i].label, 40 - accuracy.size());
    text.shown += accuracy;
    if (text.tooltip) *text.tooltip += accuracy;
    legend.line(svg::palette_colour(i, 10), text);
  }
  legend.gap();
  legend.line("#555", "training");
  legend.line("#555", "validation", "6,3");
  if (majority) legend.line("#888", "majority class " + svg::fixed(100 * *majority, 2) + "%", "2,3");
  if (curves.empty()) svg::no_data_note(s, loss, "no runs");
  s += "</svg>\n";
  return s;
}

}  // namespace lra::host
