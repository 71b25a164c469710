// runs/not_learning_warning.h: warns once, a quarter of the way in and after
// at least three validations, when the best validation accuracy is not above
// the majority class by a one-sided binomial test; silent for a run that learns.
#include <memory>
#include <sstream>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "runs/not_learning_warning.h"

using namespace lra::host;

namespace {

struct Logged {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> log =
      std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::ostream_sink_st>(text));
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(NotLearningWarning, FiresOnceForAModelAtTheMajorityClass) {
  Logged l;
  NotLearningWarning w(100, 1000, 0.119, *l.log);
  w.on_validation(10, 0.10);
  w.on_validation(20, 0.11);
  EXPECT_EQ(w.message(), "") << "not before the third validation";
  w.on_validation(30, 0.125);  // 125 of 1000 against 11.9%: p ~ 0.3
  EXPECT_NE(w.message().find("not learning"), std::string::npos);
  EXPECT_NE(w.message().find("causally under CLS pooling"), std::string::npos) << "names the likely cause";
  w.on_validation(40, 0.11);
  w.on_validation(50, 0.11);
  EXPECT_EQ(count(l.text.str(), "not learning"), 1u) << "once";
}

TEST(NotLearningWarning, SilentForALearningModelOrBeforeAQuarterOfTheSteps) {
  Logged l;
  NotLearningWarning learning(100, 1000, 0.119, *l.log);
  for (int step : {10, 20, 30, 40}) learning.on_validation(step, 0.16);  // 160 of 1000: p < 1e-4
  EXPECT_EQ(learning.message(), "");
  NotLearningWarning early(1000, 1000, 0.119, *l.log);
  for (int step : {10, 20, 30, 40}) early.on_validation(step, 0.11);  // three validations, but only 4% of the steps
  EXPECT_EQ(early.message(), "");
  early.on_validation(250, 0.11);
  EXPECT_NE(early.message(), "") << "decided at the first validation a quarter of the way in";
  EXPECT_EQ(count(l.text.str(), "not learning"), 1u);
}

// A sequence task's warning counts scored positions and names its own likely causes (no summary token).
TEST(NotLearningWarning, ASequenceTasksWarningSpeaksOfPositionsAndMemorising) {
  Logged l;
  NotLearningWarning w(100, 14000, 0.002, *l.log, /*per_position=*/true);
  for (int step : {10, 20, 30}) w.on_validation(step, 0.001);
  EXPECT_NE(w.message().find("of the scored positions"), std::string::npos) << w.message();
  EXPECT_NE(w.message().find("memorise"), std::string::npos) << w.message();
  EXPECT_EQ(w.message().find("CLS"), std::string::npos) << w.message();
}
