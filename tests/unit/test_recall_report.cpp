// Recall reports (host/recall/recall_report.h): read from sequence-task
// results, per-cell tables and the accuracy-vs-state plot; anything else is refused.
#include <gtest/gtest.h>

#include "lra/status.h"
#include "recall/recall_report.h"

using namespace lra::host;
using nlohmann::json;

namespace {

json result(const std::string& plugin, int64_t width, double accuracy, bool measured) {
  json r = {{"plugin", {{"name", plugin}}},
            {"task", {{"name", "mqar"}}},
            {"config", {{"model", {{"d_model", width}}}}},
            {"metrics",
             {{"scored", "position"},
              {"test_accuracy", accuracy},
              {"test_example_accuracy", accuracy / 2},
              {"test_cells",
               {{{"name", "length 64, 4 pairs"}, {"examples", 10}, {"positions", 40}, {"accuracy", 0.9},
                 {"example_accuracy", 0.7}},
                {{"name", "length 128, 8 pairs"}, {"examples", 10}, {"positions", 80}, {"accuracy", 0.25},
                 {"example_accuracy", 0.0}}}}}}};
  r["state_size"] = measured ? json{{"measured", true},
                                    {"per_length", {{{"length", 64}, {"bytes", 33280}}, {{"length", 128}, {"bytes", 66048}}}}}
                             : json{{"measured", false}, {"why", "does not decode"}};
  return r;
}

}  // namespace

TEST(RecallReport, ReadsCellsAndTheStateAtTheLongestLength) {
  const RecallRun r = read_recall_run(result("transformer", 64, 0.6, true), "a/result.json");
  EXPECT_EQ(r.label(), "transformer, width 64");
  ASSERT_EQ(r.cells.size(), 2u);
  EXPECT_EQ(r.cells[1].name, "length 128, 8 pairs");
  EXPECT_TRUE(r.state_measured);
  EXPECT_EQ(r.state_length, 128);
  EXPECT_EQ(r.state_bytes, 66048);
  const RecallRun n = read_recall_run(result("performer", 128, 0.1, false), "b/result.json");
  EXPECT_FALSE(n.state_measured);
  EXPECT_EQ(n.state_why, "does not decode");
}

TEST(RecallReport, TablesAndPlotShowEveryRun) {
  const std::vector<RecallRun> runs = {read_recall_run(result("transformer", 64, 0.6, true), "a/result.json"),
                                       read_recall_run(result("performer", 128, 0.1, false), "b/result.json")};
  const std::string md = recall_markdown(runs);
  EXPECT_NE(md.find("| mixer | width | state | length 64, 4 pairs | length 128, 8 pairs | all |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `transformer` | 64 | 66.0 kB at 128 | 90.0% | 25.0% | 60.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `transformer` | 64 | 66.0 kB at 128 | 70.0% | 0.0% | 30.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `performer` | 128 | not measured |"), std::string::npos) << md;
  const std::string svg = recall_svg(runs, "t");
  EXPECT_NE(svg.find("<circle"), std::string::npos);
  EXPECT_NE(svg.find("not measured"), std::string::npos);
  EXPECT_NE(svg.find("transformer, width 64: 60.0%, state 66.0 kB at 128"), std::string::npos);
}

TEST(RecallReport, AClassificationResultOrAMissingMemberIsRefusedNamingTheFile) {
  json classification = result("transformer", 64, 0.6, true);
  classification["metrics"].erase("scored");
  try {
    read_recall_run(classification, "c/result.json");
    ADD_FAILURE() << "accepted";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find("c/result.json"), std::string::npos);
  }
  json no_state = result("transformer", 64, 0.6, true);
  no_state.erase("state_size");
  EXPECT_THROW(read_recall_run(no_state, "d/result.json"), lra::Error);
  json wrong_type = result("transformer", 64, 0.6, true);
  wrong_type["metrics"]["test_cells"][0]["accuracy"] = "high";
  EXPECT_THROW(read_recall_run(wrong_type, "e/result.json"), lra::Error);
}
