// Issue 31, point 6: the 'causal' conformance check on the live model
// (plugins/conformance.h LiveCausalCheck), during the LM's training
// (forgetting/lm_training.h) and the measurement (forgetting/measure.h). Both
// directions: a model that reads later tokens fails with the step named, a
// causal one passes, and the checks change nothing in the run they guard.
#include <regex>
#include <stdexcept>

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "forgetting/lm_training.h"
#include "forgetting/measure.h"
#include "lra/status.h"
#include "model/backbone.h"
#include "model/causal_lm.h"
#include "plugins/conformance.h"

namespace lra::host {
namespace {

std::vector<int32_t> text(size_t n) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>((i * 37 + i / 7) % 256);
  return v;
}

LiveCausalOptions options(double probability, const std::vector<int32_t>* t) {
  LiveCausalOptions o;
  o.plugin = "toy";
  o.phase = "during training";
  o.probability = probability;
  o.text = t;
  return o;
}

// Outputs [B, T, 4] from a fixed embedding of each token: causal (running
// sum) or reading ahead (the token `ahead` positions later, clamped at the end).
at::Tensor embed(const at::Tensor& ids) {
  return torch::stack({ids.to(torch::kFloat), (ids * 7).remainder(13).to(torch::kFloat), torch::ones_like(ids, torch::kFloat),
                       ids.remainder(2).to(torch::kFloat)}, -1);
}
at::Tensor causal_model(const at::Tensor& ids) { return embed(ids).cumsum(1); }
TokenModel reading_ahead(int64_t ahead) {
  return [ahead](const at::Tensor& ids) {
    const int64_t T = ids.size(1);
    auto idx = torch::clamp(torch::arange(T) + ahead, 0, T - 1);
    return causal_model(ids) + embed(ids.index_select(1, idx));
  };
}

TEST(LiveCausalCheck, ACausalModelPassesAndTheRealCallsOutputsAreReturned) {
  const auto t = text(5000);
  LiveCausalCheck check(options(1.0, &t));
  const auto ids = torch::randint(0, 256, {3, 40}, torch::kLong);
  const auto y = check.run(causal_model, ids, "at step 1");
  EXPECT_TRUE(torch::equal(y, causal_model(ids)));
  EXPECT_EQ(check.stats().checks, 1);
  EXPECT_LT(check.stats().max_ratio, 1.0);
}

TEST(LiveCausalCheck, AModelReadingTheNextTokenFailsNamingThePluginCheckAndStep) {
  const auto t = text(5000);
  for (const int64_t ahead : {1, 39}) {  // the next token; only the last one
    LiveCausalCheck check(options(1.0, &t));
    try {
      check.run(reading_ahead(ahead), torch::randint(0, 256, {2, 40}, torch::kLong), "at step 7");
      FAIL() << "reading " << ahead << " ahead passed";
    } catch (const ConformanceFailure& e) {
      EXPECT_EQ(e.kind(), ErrorKind::plugin);
      EXPECT_TRUE(std::regex_search(e.what(), std::regex("^plugin 'toy' failed the conformance check 'causal' during "
                                                         "training at step 7: the model's outputs at position [0-9]+ "
                                                         "of example [0-9]+ changed by [0-9.e+]+ \\(tolerance")))
          << e.what();
    }
  }
}

// Seeded randomness in the forward is allowed (the generators are rewound
// before each of the two calls), and the real call sees the generators as
// an unchecked call would: the measurement is the same with or without the check.
TEST(LiveCausalCheck, SeededRandomnessPassesAndTheRealCallSeesTheGeneratorsUnchanged) {
  const auto t = text(5000);
  const TokenModel noisy = [](const at::Tensor& ids) { return causal_model(ids) + torch::rand({1, 1, 4}); };
  const auto ids = torch::randint(0, 256, {2, 30}, torch::kLong);
  torch::manual_seed(5);
  const auto direct = noisy(ids);
  const auto after_direct = torch::rand({3});
  torch::manual_seed(5);
  LiveCausalCheck check(options(1.0, &t));
  const auto checked = check.run(noisy, ids, "at batch 1");
  EXPECT_TRUE(torch::equal(direct, checked));
  EXPECT_TRUE(torch::equal(after_direct, torch::rand({3})));
}

TEST(LiveCausalCheck, TheScheduleIsRandomAtTheGivenRateAndNotTheSameTwice) {
  const auto t = text(100);
  LiveCausalCheck never(options(0.0, &t)), always(options(1.0, &t)), a(options(1.0 / 16, &t)), b(options(0.5, &t)),
      c(options(0.5, &t));
  int64_t hits = 0;
  std::string sb, sc;
  for (int i = 0; i < 16000; ++i) {
    EXPECT_FALSE(never.due());
    EXPECT_TRUE(always.due());
    hits += a.due();
    if (i < 256) {
      sb += b.due() ? '1' : '0';
      sc += c.due() ? '1' : '0';
    }
  }
  EXPECT_NEAR(static_cast<double>(hits), 1000.0, 200.0);  // sd ~31
  EXPECT_NE(sb, sc) << "two checkers drew the same schedule: not seeded from a secret";
  EXPECT_EQ(a.stats().calls, 16000);
}

// A failed live check ends the measurement; any other failure is recorded
// for its length and the sweep goes on (docs/forgetting.md).
TEST(LiveCausalCheck, AFailureEndsTheMeasurementInsteadOfBecomingAFailedLength) {
  forgetting::MeasureConfig c;
  c.max_length = 32;
  c.granularity = 3;
  c.repeats = 2;
  c.samples = {256, 257, 1};
  const auto stream = text(4000);
  EXPECT_THROW(forgetting::measure_curve([](const at::Tensor&) -> at::Tensor { throw ConformanceFailure("broken"); },
                                         stream, c),
               ConformanceFailure);
  const auto curve =
      forgetting::measure_curve([](const at::Tensor&) -> at::Tensor { throw std::runtime_error("other"); }, stream, c);
  EXPECT_FALSE(curve.complete);
}

ModelConfig tiny() {
  ModelConfig m;
  m.layers = 2;
  m.d_model = 32;
  m.heads = 2;
  m.qkv_dim = 32;
  m.ffn_dim = 64;
  m.pooling = "none";
  m.positions = "rotary";
  m.max_len = 32;
  return m;
}

forgetting::LmTrainOptions train_options(int64_t steps) {
  forgetting::LmTrainOptions o;
  o.seq_len = 32;
  o.train.steps = steps;
  o.train.batch_size = 4;
  o.train.lr = 3e-3;
  o.train.schedule = "constant";
  o.train.beta1 = 0.9;
  o.train.beta2 = 0.95;
  o.train.eps = 1e-8;
  o.train.weight_decay = 0.1;
  o.train.grad_clip = 1.0;
  o.train.eval_every = steps;
  o.train.eval_batch_size = 8;
  o.train.steps_per_cycle = 1;
  o.eval_windows = 4;
  return o;
}

// Reference attention that, after `after` calls, adds the next position's
// input to each position (the issue's mixer, in-process).
class LateLeak final : public lra::Mixer {
 public:
  LateLeak(const lra::MixerSpec& s, int64_t after, int64_t* calls)
      : inner_(register_module("inner", make_reference_attention(s))), after_(after), calls_(calls) {}
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) override {
    auto y = inner_->forward(x, mask);
    if (++*calls_ <= after_) return y;
    const int64_t L = x.size(1);
    return torch::cat({y.narrow(1, 0, L - 1) + x.narrow(1, 1, L - 1), y.narrow(1, L - 1, 1)}, 1);
  }

 private:
  std::shared_ptr<lra::Mixer> inner_;
  int64_t after_;
  int64_t* calls_;
};

TEST(LiveCausalTraining, ChecksOnEveryStepLeaveTrainingBitIdentical) {
  const auto t = text(20000);
  auto log = spdlog::logger("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  auto train = [&](LiveCausalCheck* check) {
    torch::manual_seed(3);
    CausalLM lm(CausalLMSpec{tiny()}, make_reference_attention);
    auto o = train_options(12);
    o.spot_check = check;
    forgetting::train_causal_lm(lm, t, t, o, log);
    return lm;
  };
  LiveCausalCheck check(options(1.0, &t));
  auto plain = train(nullptr), checked = train(&check);
  EXPECT_EQ(check.stats().checks, 12);
  EXPECT_LT(check.stats().max_ratio, 1.0);
  const auto a = plain->parameters(), b = checked->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
}

TEST(LiveCausalTraining, AMixerThatStartsLeakingMidTrainingIsCaughtWithTheStep) {
  const auto t = text(20000);
  auto log = spdlog::logger("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  int64_t calls = 0;
  torch::manual_seed(3);
  // 2 layers; a checked step makes 3 forwards: it turns at the 4th step.
  CausalLM lm(CausalLMSpec{tiny()}, [&](const lra::MixerSpec& s) { return std::make_shared<LateLeak>(s, 18, &calls); });
  LiveCausalCheck check(options(1.0, &t));
  auto o = train_options(10);
  o.spot_check = &check;
  try {
    forgetting::train_causal_lm(lm, t, t, o, log);
    FAIL() << "the leak went unnoticed";
  } catch (const ConformanceFailure& e) {
    EXPECT_NE(std::string(e.what()).find("during training at step 4:"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lra::host
