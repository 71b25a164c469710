// curves/learning_curves.h: a result's history as history.csv and as
// curves.svg, one run or overlaid; malformed histories refused naming the field.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "curves/learning_curves.h"
#include "lra/status.h"

using nlohmann::json;
using namespace lra::host;

namespace {

json result(const std::string& plugin, int64_t seed, double majority) {
  return {{"plugin", {{"name", plugin}}},
          {"task", {{"name", "listops"}}},
          {"seed", seed},
          {"metrics", {{"majority_class_rate", majority}, {"test_accuracy", 0.345}}},
          {"history",
           {{{"step", 10}, {"lr", 1e-4}, {"train_loss", 2.5}, {"train_accuracy", 0.15}},
            {{"step", 20}, {"lr", 2e-4}, {"train_loss", 2.25}, {"train_accuracy", 0.2}, {"val_loss", 2.0},
             {"val_accuracy", 0.3}}}}};
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(LearningCurves, HistoryCsvHasOneRowPerReportAndEmptyCellsForWhatWasNotMeasured) {
  const LearningCurve c = learning_curve(result("transformer", 0, 0.119), "r.json", {{20, 4.5}});
  EXPECT_EQ(c.label, "transformer on listops, seed 0");
  ASSERT_EQ(c.points.size(), 2u);
  EXPECT_EQ(history_csv(c),
            "step,lr,train_loss,train_accuracy,val_loss,val_accuracy,steps_per_second\n"
            "10,0.0001,2.5,0.15,,,\n"
            "20,0.0002,2.25,0.2,2,0.3,4.5\n");
}

TEST(LearningCurves, SvgDrawsTrainingAndValidationPerRunAndASharedMajorityLine) {
  const auto a = learning_curve(result("transformer", 0, 0.119), "a");
  const auto b = learning_curve(result("performer", 1, 0.119), "b");
  const std::string one = curves_svg({a}, "one <run>");
  EXPECT_EQ(one.rfind("<svg", 0), 0u);
  EXPECT_NE(one.find("one &lt;run&gt;"), std::string::npos) << "the title is escaped";
  EXPECT_EQ(count(one, "class=\"train\""), 2u) << "loss and accuracy panels";
  EXPECT_EQ(count(one, "class=\"majority\""), 1u);
  EXPECT_NE(one.find("test 34.50%"), std::string::npos);
  const std::string two = curves_svg({a, b}, "two");
  EXPECT_EQ(count(two, "class=\"train\""), 4u);
  EXPECT_NE(two.find("performer on listops, seed 1"), std::string::npos);
  // Runs of different tasks have different majority rates: no line then.
  const auto other = learning_curve(result("transformer", 0, 0.5), "c");
  EXPECT_EQ(count(curves_svg({a, other}, "mixed"), "class=\"majority\""), 0u);
  EXPECT_NE(curves_svg({}, "none").find("no runs"), std::string::npos);
  // Issue 48: a long label (a Python mixer's path) is cut, never the accuracy after it.
  const auto long_label =
      learning_curve(result("/home/someone/projects/s4/models/s4/s4d_port.py:S4DPort", 0, 0.119), "d");
  const std::string cut = curves_svg({long_label}, "long");
  EXPECT_NE(cut.find("…: test 34.50%"), std::string::npos) << cut;
}

TEST(LearningCurves, MalformedHistoriesAreRefusedNamingTheField) {
  auto error_of = [](const json& r) {
    try {
      learning_curve(r, "bad.json");
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::data);
      return std::string(e.what());
    }
    return std::string();
  };
  json r = result("t", 0, 0.1);
  r.erase("history");
  EXPECT_NE(error_of(r).find("bad.json: history"), std::string::npos);
  r = result("t", 0, 0.1);
  r["history"][1]["step"] = 5;  // not ascending
  EXPECT_NE(error_of(r).find("history[1].step"), std::string::npos);
  r = result("t", 0, 0.1);
  r["history"][0]["train_loss"] = "high";
  EXPECT_NE(error_of(r).find("history[0].train_loss"), std::string::npos);
  EXPECT_NE(error_of(json::array()).find("not a JSON object"), std::string::npos);
}
