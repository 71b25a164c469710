// Optimizer hints (lra::ParamHint, SDK 1.2) through the host's real training
// loop: a hinted parameter takes no weight decay while an unhinted one decays;
// a learning-rate cap scales the schedule; hints that would raise anything, or
// name no parameter, are refused naming the plugin; a plugin built before
// SDK 1.2 is never asked.
#include <gtest/gtest.h>

#include <spdlog/sinks/null_sink.h>

#include "lra/mixer.h"
#include "lra/status.h"
#include "train/optimizer_groups.h"
#include "train/training_loop.h"

using namespace lra::host;

namespace {

// Two parameters of one value each, with whatever hints the test gives it.
class HintedMixer final : public lra::Mixer {
 public:
  explicit HintedMixer(std::vector<lra::ParamHint> hints) : hints_(std::move(hints)) {
    a = register_parameter("a", torch::ones({4}));
    b = register_parameter("b", torch::ones({4}));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor&) override { return x; }
  std::vector<lra::ParamHint> optimizer_hints() const override { return hints_; }
  torch::Tensor a, b;

 private:
  std::vector<lra::ParamHint> hints_;
};

struct Model : torch::nn::Module {
  explicit Model(std::vector<lra::ParamHint> hints)
      : mixer(register_module("mixer", std::make_shared<HintedMixer>(std::move(hints)))) {}
  std::shared_ptr<HintedMixer> mixer;
};

// loss = grad_scale * sum of every parameter: a gradient of grad_scale everywhere.
class SumObjective final : public TrainingObjective {
 public:
  SumObjective(torch::nn::Module& m, double grad_scale) : m_(m), scale_(grad_scale) {}
  void start(int64_t) override {}
  void accumulate_gradients(TrainWindow& w) override {
    torch::Tensor loss = torch::zeros({});
    for (const auto& p : m_.parameters()) loss = loss + p.sum() * scale_;
    backward(loss);
    w.loss += loss.detach().to(torch::kDouble);
    w.count += 1;
  }
  bool has_accuracy() const override { return false; }
  std::string evaluate(int64_t, nlohmann::json&) override { return ""; }

 private:
  torch::nn::Module& m_;
  double scale_;
};

TrainConfig config() {
  TrainConfig t;
  t.steps = 1;
  t.batch_size = 1;
  t.lr = 0.01;
  t.schedule = "constant";
  t.weight_decay = 0.5;
  t.beta1 = 0.9;
  t.beta2 = 0.98;
  t.eps = 1e-9;
  t.eval_every = 1;
  return t;
}

// One update of the host's loop with these groups; returns the model.
void train_once(Model& m, const std::vector<OptimizerGroup>& groups, double grad_scale) {
  TrainingLoopOptions o;
  o.train = config();
  o.groups = groups;
  SumObjective objective(m, grad_scale);
  spdlog::logger log("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  run_training_loop(m, objective, o, log);
}

lra::ParamHint hint(const std::string& name, bool no_wd, double scale = 1.0, double cap = 0.0) {
  lra::ParamHint h;
  h.name = name;
  h.no_weight_decay = no_wd;
  h.lr_scale = scale;
  h.lr_max = cap;
  return h;
}

}  // namespace

TEST(OptimizerGroups, AHintedParameterTakesNoWeightDecayAndAnUnhintedOneDecays) {
  Model m({hint("b", /*no_wd=*/true)});
  const auto groups = optimizer_groups(m, {m.mixer}, /*plugin_abi_minor=*/2, "fixture", config());
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].names, std::vector<std::string>{"mixer.a"});
  EXPECT_EQ(groups[1].names, std::vector<std::string>{"mixer.b"});
  EXPECT_TRUE(groups[1].no_weight_decay);
  EXPECT_EQ(groups[1].rule, "no weight decay, the schedule's learning rate");
  // Zero gradients: AdamW's decoupled decay alone moves a parameter.
  train_once(m, groups, 0.0);
  EXPECT_FLOAT_EQ(m.mixer->a[0].item<float>(), 1.0f - 0.01f * 0.5f);  // decayed
  EXPECT_FLOAT_EQ(m.mixer->b[0].item<float>(), 1.0f);                 // untouched
  const auto record = optimizer_record(groups, 0.5);
  EXPECT_EQ(record["groups"][0]["weight_decay"], 0.5);
  EXPECT_EQ(record["groups"][1]["weight_decay"], 0.0);
  EXPECT_EQ(record["groups"][1]["elements"], 4);
}

TEST(OptimizerGroups, ACapOnTheLearningRateScalesTheScheduleAndNeverRaisesIt) {
  // A constant schedule of 0.01: a cap of 0.002 makes b's rate a fifth of a's;
  // a cap above the peak changes nothing. Adam's first step moves each
  // parameter by its learning rate (gradient 1 everywhere), plus the decay.
  Model m({hint("b", false, 1.0, 0.002), hint("a", false, 1.0, 0.5)});
  const auto groups = optimizer_groups(m, {m.mixer}, 2, "fixture", config());
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].names, std::vector<std::string>{"mixer.a"});
  EXPECT_NEAR(groups[1].lr_factor, 0.2, 1e-12);
  EXPECT_NE(groups[1].rule.find("capped at 0.002"), std::string::npos) << groups[1].rule;
  train_once(m, groups, 1.0);
  EXPECT_NEAR(m.mixer->a[0].item<float>(), 1.0 - 0.01 * 0.5 - 0.01, 1e-6);
  EXPECT_NEAR(m.mixer->b[0].item<float>(), 1.0 - 0.002 * 0.5 - 0.002, 1e-6);
}

TEST(OptimizerGroups, HintsThatWouldRaiseOrNameNoParameterAreRefusedNamingThePlugin) {
  auto refused = [](const lra::ParamHint& h, const std::string& says) {
    Model m({h});
    try {
      optimizer_groups(m, {m.mixer}, 2, "my_ssm", config());
      ADD_FAILURE() << "accepted a hint for " << h.name;
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::plugin);
      EXPECT_NE(std::string(e.what()).find("plugin 'my_ssm'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(hint("a", false, 2.0), "may only lower the learning rate (0 < lr_scale <= 1)");
  refused(hint("a", false, 0.0), "lr_scale 0");
  refused(hint("a", false, std::nan("")), "lr_scale nan");
  refused(hint("a", false, 1.0, -1.0), "lr_max -1");
  refused(hint("c", true), "names 'c', which is not one of the mixer's parameters (a, b)");
  Model twice({hint("a", true), hint("a", false, 0.5)});
  EXPECT_THROW(optimizer_groups(twice, {twice.mixer}, 2, "my_ssm", config()), lra::Error);
}

TEST(OptimizerGroups, APluginBuiltBeforeSdk12IsNotAskedAndAllOfItTrainsAsOneGroup) {
  Model m({hint("b", true), hint("zzz", true)});  // an unknown name too: never read
  const auto groups = optimizer_groups(m, {m.mixer}, /*plugin_abi_minor=*/1, "old", config());
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].names, (std::vector<std::string>{"mixer.a", "mixer.b"}));
}
