// CUDA graphs for training updates (train/step_graph.h): when a run's updates
// are captured, and why not otherwise. Plain logic: every branch on the CPU.
// (Captured against eager numbers: tests/unit/mixers/device_parity.cpp.)
#include <gtest/gtest.h>

#include "lra/abi.h"
#include "lra/capabilities.h"
#include "lra/status.h"
#include "plugins/descriptor.h"
#include "train/step_graph.h"

namespace host = lra::host;
using host::GraphConditions;
using host::GraphRequest;

namespace {

// Every condition for a capture met, the mixer graph-safe.
GraphConditions capturable() {
  GraphConditions c;
  c.request = GraphRequest::automatic;
  c.cuda = true;
  c.compiled = true;
  c.mixers = {{"transformer", LRA_CAP_PADDING_MASK | LRA_CAP_GRAPH_SAFE}};
  c.fixed_shapes = true;
  c.fused_optimizer = true;
  return c;
}

TEST(StepGraph, EveryConditionMetAndDeclaredCaptures) {
  const auto p = host::plan_step_graph(capturable());
  EXPECT_TRUE(p.capture);
  EXPECT_EQ(p.words, "captured");
  EXPECT_FALSE(p.refused);
  EXPECT_FALSE(p.required) << "auto: a capture that fails goes on eagerly";
}

TEST(StepGraph, EachMissingConditionTurnsItOffAndSaysWhich) {
  struct Case {
    void (*change)(GraphConditions&);
    const char* words;
  };
  const Case cases[] = {
      {[](GraphConditions& c) { c.cuda = false; }, "off: the run trains on the CPU"},
      {[](GraphConditions& c) { c.compiled = false; }, "this build cannot capture"},
      {[](GraphConditions& c) { c.distributed = true; }, "all-reduced between ranks"},
      {[](GraphConditions& c) { c.isolated = true; }, "(--isolate)"},
      {[](GraphConditions& c) { c.fixed_shapes = false; }, "shapes change between updates"},
      {[](GraphConditions& c) { c.fused_optimizer = false; }, "LRA_FUSED_OPTIMIZER=0"},
  };
  for (const auto& k : cases) {
    for (const auto request : {GraphRequest::automatic, GraphRequest::on}) {
      auto c = capturable();
      c.request = request;
      k.change(c);
      const auto p = host::plan_step_graph(c);
      SCOPED_TRACE(std::string(k.words) + ", --cuda-graphs " + host::graph_request_name(request));
      EXPECT_FALSE(p.capture);
      EXPECT_NE(p.words.find(k.words), std::string::npos) << p.words;
      EXPECT_EQ(p.words.rfind("off: ", 0), 0u) << p.words;
      // Asked for explicitly and impossible: refused, not silently eager.
      EXPECT_EQ(p.refused, request == GraphRequest::on);
    }
  }
}

TEST(StepGraph, AMixerThatDoesNotDeclareGraphSafeIsNotCapturedUnlessAskedFor) {
  auto c = capturable();
  c.mixers = {{"my_mixer", LRA_CAP_PADDING_MASK | LRA_CAP_CAUSAL}};
  auto p = host::plan_step_graph(c);
  EXPECT_FALSE(p.capture);
  EXPECT_FALSE(p.refused);
  EXPECT_EQ(p.words, "off: plugin my_mixer does not declare graph_safe (LRA_CAP_GRAPH_SAFE)");

  c.request = GraphRequest::on;  // a plugin author trying capture
  p = host::plan_step_graph(c);
  EXPECT_TRUE(p.capture);
  EXPECT_TRUE(p.required) << "on: a capture that fails must end the run, not go on eagerly";
  EXPECT_NE(p.words.find("my_mixer does not declare graph_safe"), std::string::npos) << p.words;
}

TEST(StepGraph, OffIsOffWhateverElseHolds) {
  auto c = capturable();
  c.request = GraphRequest::off;
  const auto p = host::plan_step_graph(c);
  EXPECT_FALSE(p.capture);
  EXPECT_FALSE(p.refused);
  EXPECT_EQ(p.words, "off (--cuda-graphs off)");
}

TEST(StepGraph, RequestsParseAndABadOneIsAUsageError) {
  for (const char* name : {"auto", "on", "off"})
    EXPECT_STREQ(host::graph_request_name(host::parse_graph_request(name)), name);
  try {
    host::parse_graph_request("yes");
    FAIL() << "accepted 'yes'";
  } catch (const lra::Error& e) {
    EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("'yes' is not one of auto, on, off"), std::string::npos) << e.what();
  }
}

// The capability is one more entry of the SDK's one list: named, known to the
// descriptor check, spelled as a Python mixer spells it.
TEST(StepGraph, GraphSafeIsACapabilityTheHostKnowsByName) {
  EXPECT_EQ(lra::capability_bit("graph_safe"), static_cast<uint32_t>(LRA_CAP_GRAPH_SAFE));
  EXPECT_EQ(host::capability_names(LRA_CAP_GRAPH_SAFE | LRA_CAP_CAUSAL),
            (std::vector<std::string>{"causal", "graph_safe"}));
  EXPECT_TRUE(host::kKnownCapabilities & LRA_CAP_GRAPH_SAFE);
  EXPECT_EQ(lra::capability_bit("graph-safe"), 0u);
}

// On the CPU an UpdateGraph captures nothing: each update runs eagerly (what
// the staged path's CPU test relies on), and the warm-up count does not matter.
TEST(StepGraph, OnTheCpuEveryUpdateRunsEagerly) {
  host::UpdateGraph g(c10::Device(c10::kCPU), 1);
  int runs = 0, before = 0;
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(g.run([&] { ++runs; }, [&] { ++before; }));
  EXPECT_EQ(runs, 4);
  EXPECT_EQ(before, 0);
  EXPECT_FALSE(g.captured());
  EXPECT_EQ(g.replays(), 0);
}

}  // namespace
