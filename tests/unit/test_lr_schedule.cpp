#include <cmath>

#include <gtest/gtest.h>

#include "manifest/presets.h"
#include "train/lr_schedule.h"

namespace lra::host {
namespace {

constexpr double kPi = 3.14159265358979323846;

TrainConfig config(const std::string& schedule, double lr, int64_t warmup, int64_t cycle = 100000) {
  TrainConfig t;
  t.schedule = schedule;
  t.lr = lr;
  t.warmup = warmup;
  t.steps_per_cycle = cycle;
  return t;
}

// Relative comparison for values spanning many magnitudes.
// The rate at update s of a schedule parsed from `t`.
double learning_rate(const TrainConfig& t, int64_t s) { return LrSchedule(t)(s); }

void expect_rel(double got, double want, double rel = 1e-12) {
  EXPECT_NEAR(got, want, std::abs(want) * rel + 1e-300) << "got " << got << " want " << want;
}

TEST(Schedule, WarmupStableDecay) {
  // WSD (MiniCPM): warmup from 1/W to 1, stable at 1, linear decay to 1/D at s = T.
  TrainConfig t = config("constant*wsd", 1e-3, 10);
  t.steps = 100;
  t.decay_steps = 40;  // stable phase: s in [10, 60)
  expect_rel(learning_rate(t, 0), 1e-3 / 10);
  expect_rel(learning_rate(t, 5), 1e-3 * (0.1 + 0.9 * 0.5));
  expect_rel(learning_rate(t, 10), 1e-3);
  expect_rel(learning_rate(t, 59), 1e-3);
  expect_rel(learning_rate(t, 60), 1e-3);
  expect_rel(learning_rate(t, 80), 1e-3 * (1.0 - (1.0 - 1.0 / 40) * 0.5));
  expect_rel(learning_rate(t, 100), 1e-3 / 40);
  for (int64_t s = 61; s <= 100; ++s) EXPECT_LT(learning_rate(t, s), learning_rate(t, s - 1));
  // The official forgetting manifest: W = 200, D = 800 of T = 2000.
  const TrainConfig f = load_preset("forgetting", "official").train;
  expect_rel(learning_rate(f, 200), 1e-3);
  expect_rel(learning_rate(f, 1199), 1e-3);
  expect_rel(learning_rate(f, 2000), 1e-3 / 800);
}

TEST(Schedule, ListOpsReferenceNumbers) {
  const TrainConfig t = load_preset("listops", "official").train;
  EXPECT_EQ(learning_rate(t, 0), 0.0);  // the first update uses lr = 0
  expect_rel(learning_rate(t, 1), 0.05 * (1.0 / 1000.0) / std::sqrt(1000.0));
  expect_rel(learning_rate(t, 500), 0.05 * 0.5 / std::sqrt(1000.0));
  expect_rel(learning_rate(t, 1000), 0.05 / std::sqrt(1000.0));
  EXPECT_NEAR(learning_rate(t, 1000), 1.581e-3, 0.001e-3);  // the sheet's peak
  expect_rel(learning_rate(t, 4999), 0.05 / std::sqrt(4999.0));
  EXPECT_NEAR(learning_rate(t, 4999), 7.07e-4, 0.01e-4);  // the sheet's last step
  // The peak is at s = W.
  EXPECT_LT(learning_rate(t, 999), learning_rate(t, 1000));
  EXPECT_GT(learning_rate(t, 1000), learning_rate(t, 1001));
}

TEST(Schedule, TextAndRetrievalReferenceNumbers) {
  const TrainConfig text = config("constant*linear_warmup*rsqrt_decay", 0.05, 8000);
  EXPECT_NEAR(learning_rate(text, 8000), 5.590e-4, 0.001e-4);
  EXPECT_NEAR(learning_rate(text, 19999), 3.54e-4, 0.01e-4);
  // Retrieval: 5000 steps end inside the 8000-step warmup.
  EXPECT_NEAR(learning_rate(text, 4999), 3.49e-4, 0.01e-4);
}

TEST(Schedule, CosineReferenceNumbers) {
  // Image: base 5e-4, W 175, C 35,000.
  const TrainConfig image = config("constant*linear_warmup*cosine_decay", 5e-4, 175, 35000);
  EXPECT_EQ(learning_rate(image, 0), 0.0);
  expect_rel(learning_rate(image, 100), 5e-4 * 100.0 / 175.0);
  expect_rel(learning_rate(image, 175), 5e-4);
  const double p = (34999.0 - 175.0) / 35000.0;
  expect_rel(learning_rate(image, 34999), 5e-4 * 0.5 * (1.0 + std::cos(kPi * p)), 1e-9);
  EXPECT_NEAR(learning_rate(image, 34999), 3.1e-8, 0.05e-8);
  // Pathfinder: base 1e-3, W 312, C 62,400; Path-X: W 2500, C 500,000.
  const TrainConfig pf = config("constant*linear_warmup*cosine_decay", 1e-3, 312, 62400);
  expect_rel(learning_rate(pf, 312), 1e-3);
  EXPECT_NEAR(learning_rate(pf, 62399), 6.2e-8, 0.05e-8);
  const TrainConfig px = config("constant*linear_warmup*cosine_decay", 1e-3, 2500, 500000);
  EXPECT_NEAR(learning_rate(px, 499999), 6.2e-8, 0.05e-8);
  // Half a cycle after warmup the cosine factor is 1/2.
  expect_rel(learning_rate(image, 175 + 17500), 5e-4 * 0.5, 1e-12);
}

TEST(Schedule, CosineWrapsAfterOneCycle) {
  // p mod 1: the factor restarts at 1 after a full cycle (the reference's behaviour).
  const TrainConfig t = config("cosine_decay", 1.0, 10, 100);
  expect_rel(learning_rate(t, 0), 1.0);   // p = max(0, negative) = 0
  expect_rel(learning_rate(t, 10), 1.0);
  expect_rel(learning_rate(t, 60), 0.5);
  expect_rel(learning_rate(t, 110), 1.0);  // p = 1 -> p mod 1 = 0
  expect_rel(learning_rate(t, 85), 0.5 * (1.0 + std::cos(kPi * 0.75)));
}

TEST(Schedule, RsqrtNormalizedDecay) {
  const TrainConfig t = config("constant*rsqrt_normalized_decay", 2.0, 100);
  expect_rel(learning_rate(t, 0), 2.0);
  expect_rel(learning_rate(t, 100), 2.0);
  expect_rel(learning_rate(t, 400), 2.0 * 10.0 / 20.0);
}

TEST(Schedule, DecayEvery) {
  const TrainConfig t = config("constant*decay_every", 1.0, 1);
  expect_rel(learning_rate(t, 0), 1.0);
  expect_rel(learning_rate(t, 19999), 1.0);
  expect_rel(learning_rate(t, 20000), 0.5);
  expect_rel(learning_rate(t, 45000), 0.25);
}

TEST(Schedule, FactorParsing) {
  auto f = parse_lr_factors(" constant * linear_warmup*rsqrt_decay ");
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, (std::vector<LrFactor>{LrFactor::constant, LrFactor::linear_warmup,
                                       LrFactor::rsqrt_decay}));
  std::string bad;
  EXPECT_FALSE(parse_lr_factors("constant*linear_warmupp", &bad));
  EXPECT_EQ(bad, "linear_warmupp");
  EXPECT_FALSE(parse_lr_factors("", &bad));
  EXPECT_EQ(bad, "");
  EXPECT_FALSE(parse_lr_factors("constant**rsqrt_decay", &bad));
  // Repeated factors multiply again, as in the reference.
  expect_rel(learning_rate(config("constant*constant", 0.5, 1), 7), 0.25);
}

TEST(Schedule, OneObjectServesEveryUpdateAndRejectsUnknown) {
  const TrainConfig t = config("constant*linear_warmup*rsqrt_decay", 0.05, 1000);
  const LrSchedule sched(t);
  for (int64_t s : {0, 1, 999, 1000, 1001, 4999}) EXPECT_EQ(sched(s), learning_rate(t, s));
  EXPECT_EQ(sched.factors().size(), 3u);
  try {
    LrSchedule bad(config("constant*warmup", 1.0, 1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::rules);
    EXPECT_NE(std::string(e.what()).find("warmup"), std::string::npos);
  }
  EXPECT_EQ(learning_rate(config("constant", 0.3, 1), 5), 0.3);
  EXPECT_THROW(learning_rate(config("constant*nope", 0.3, 1), 5), Error);
  EXPECT_THROW(sched(-1), Error);
}

}  // namespace
}  // namespace lra::host
