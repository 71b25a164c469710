// The forgetting-curve measurement (docs/forgetting.md, "What is measured" to
// "The memory lengths").
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <torch/script.h>

#include "forgetting/lm_training.h"
#include "forgetting/measure.h"
#include "forgetting/samples.h"
#include "forgetting/torchscript_lm.h"
#include "lra/rotary.h"
#include "lra/status.h"
#include "model/causal_lm.h"

namespace lra::host::forgetting {
namespace {

// A stream of "text": ids 0..249 in a fixed pseudo-random order.
std::vector<int32_t> make_stream(size_t n, uint32_t seed = 1) {
  std::vector<int32_t> v(n);
  uint32_t x = seed;
  for (auto& t : v) {
    x = x * 1664525u + 1013904223u;
    t = static_cast<int32_t>((x >> 8) % 250);
  }
  return v;
}

constexpr int64_t kBos = 256, kEos = 257;

TEST(ForgettingLengths, LinearScheduleMatchesTheReferenceTool) {
  auto L = test_lengths(16000, 32, "linear");
  ASSERT_EQ(L.size(), 32u);
  EXPECT_EQ(L[0], 8);
  EXPECT_EQ(L[1], 523);  // the reference tool's schedule: 8, 523, 1039, ..., 16000 (8 + i * 15992 / 31, truncated)
  EXPECT_EQ(L[2], 1039);
  EXPECT_EQ(L.back(), 16000);
}

TEST(ForgettingLengths, LogScheduleIsGeometricWithoutDuplicates) {
  auto L = test_lengths(64, 8, "log");
  EXPECT_EQ(L.front(), 8);
  EXPECT_EQ(L.back(), 64);
  for (size_t i = 1; i < L.size(); ++i) EXPECT_LT(L[i - 1], L[i]);
  auto dense = test_lengths(10, 32, "log");  // many values truncate to the same integer
  EXPECT_EQ(dense, (std::vector<int64_t>{8, 9, 10}));
}

TEST(ForgettingLengths, BadOptionsAreUsageErrors) {
  for (auto f : {+[] { test_lengths(7, 4, "linear"); }, +[] { test_lengths(100, 0, "linear"); },
                 +[] { test_lengths(100, 4, "cubic"); },
                 +[] { test_lengths(2000000000, 4, "linear"); }}) {  // issue 18: bounded before allocating
    try {
      f();
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
    }
  }
}

TEST(ForgettingSamples, CopyAndLmLayoutsAreExact) {
  const auto stream = make_stream(1000);
  const int64_t L = 10;
  auto p = make_samples(stream, L, 3, {kBos, kEos, 7});
  ASSERT_EQ(p.copy.size(), static_cast<size_t>(2 * L + 3));
  ASSERT_EQ(p.lm.size(), static_cast<size_t>(2 * L + 3));
  EXPECT_EQ(p.copy[0], kBos);
  EXPECT_EQ(p.copy[L + 1], kBos);
  EXPECT_EQ(p.copy[2 * L + 2], kEos);
  EXPECT_EQ(p.lm[0], kBos);
  EXPECT_EQ(p.lm[L + 1], kBos);
  EXPECT_EQ(p.lm[2 * L + 2], kEos);
  for (int64_t i = 0; i < L; ++i) {
    EXPECT_EQ(p.copy[1 + i], stream[p.s_offset + i]);      // first S
    EXPECT_EQ(p.copy[L + 2 + i], stream[p.s_offset + i]);  // second S
    EXPECT_EQ(p.lm[1 + i], stream[p.i_offset + i]);        // I
    EXPECT_EQ(p.lm[L + 2 + i], stream[p.s_offset + i]);    // the same S
  }
  // S from the first half, I from the second: they never overlap.
  EXPECT_LE(p.s_offset + L, 500);
  EXPECT_GE(p.i_offset, 500);
  EXPECT_LE(p.i_offset + L, 1000);
}

TEST(ForgettingSamples, EachSampleDependsOnlyOnSeedLengthAndRepetition) {
  const auto stream = make_stream(5000);
  auto a = make_samples(stream, 100, 2, {kBos, kEos, 1});
  auto b = make_samples(stream, 100, 2, {kBos, kEos, 1});
  EXPECT_EQ(a.copy, b.copy);
  EXPECT_EQ(a.lm, b.lm);
  EXPECT_NE(make_samples(stream, 100, 3, {kBos, kEos, 1}).s_offset, a.s_offset);
  EXPECT_NE(make_samples(stream, 100, 2, {kBos, kEos, 2}).s_offset, a.s_offset);
}

TEST(ForgettingSamples, TooShortAStreamIsADataErrorNamingTheSizes) {
  try {
    make_samples(make_stream(100), 60, 0, {kBos, kEos, 0});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find("100 tokens"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("120"), std::string::npos) << e.what();
  }
}

TEST(ForgettingScoring, ScoresTheLastHalfOfTheSecondS) {
  EXPECT_EQ(scored_range(523).end - scored_range(523).first, 262);  // ceil(523 / 2)
  EXPECT_EQ(scored_range(8).end - scored_range(8).first, 4);
  EXPECT_EQ(scored_range(9).first, 2 * 9 + 2 - 5);
  EXPECT_EQ(scored_range(9).end, 2 * 9 + 2);  // the eos position is never scored

  const int64_t L = 8;
  std::vector<int64_t> sample(2 * L + 3);
  for (size_t i = 0; i < sample.size(); ++i) sample[i] = static_cast<int64_t>(i) * 3;
  // A perfect next-token predictor: the argmax at p - 1 is the token at p.
  std::vector<int64_t> argmax(sample.size(), -1);
  for (size_t p = 1; p < sample.size(); ++p) argmax[p - 1] = sample[p];
  EXPECT_DOUBLE_EQ(score_sample(argmax.data(), sample, L), 1.0);
  // Wrong exactly at the first scored position: 3 of 4.
  argmax[scored_range(L).first - 1] = -5;
  EXPECT_DOUBLE_EQ(score_sample(argmax.data(), sample, L), 0.75);
  // Errors outside the scored range do not count.
  argmax[0] = argmax[L] = -5;
  EXPECT_DOUBLE_EQ(score_sample(argmax.data(), sample, L), 0.75);
}

// Predicts, after the second bos, the token that followed the same offset
// after the first bos: a perfect copier. Elsewhere it predicts 0.
at::Tensor ideal_copier(const at::Tensor& ids) {
  auto out = at::zeros_like(ids);
  for (int64_t b = 0; b < ids.size(0); ++b) {
    auto row = ids[b];
    const int64_t T = ids.size(1), L = (T - 3) / 2;
    for (int64_t p = L + 1; p < 2 * L + 1; ++p) out[b][p] = row[p - L];
  }
  return out;
}

// Predicts "the next token equals this one": blind to everything before.
at::Tensor context_blind(const at::Tensor& ids) { return ids.clone(); }

MeasureConfig small_config() {
  MeasureConfig c;
  c.max_length = 64;
  c.granularity = 5;
  c.repeats = 4;
  c.samples = {kBos, kEos, 11};
  return c;
}

TEST(ForgettingMeasure, AnIdealCopierHasFineLengthAtTheLongestTestedLength) {
  auto curve = measure_curve(ideal_copier, make_stream(4000), small_config());
  ASSERT_EQ(curve.points.size(), 5u);
  for (const auto& p : curve.points) {
    EXPECT_DOUBLE_EQ(p.copy_mean, 1.0);
    EXPECT_EQ(p.copy_accs.size(), 4u);
  }
  EXPECT_EQ(curve.fine.value, 64);
  EXPECT_TRUE(curve.fine.censored);
  EXPECT_TRUE(curve.complete);
}

TEST(ForgettingMeasure, AContextBlindModelHasCoarseLengthZero) {
  auto curve = measure_curve(context_blind, make_stream(4000), small_config());
  for (const auto& p : curve.points) {
    EXPECT_EQ(p.copy_accs, p.lm_accs);  // same S scored, no use of the prefix
    EXPECT_DOUBLE_EQ(p.p_value, 1.0);
  }
  EXPECT_EQ(curve.coarse.value, 0);
  EXPECT_EQ(curve.fine.value, 0);
}

TEST(ForgettingMeasure, IsDeterministicAndIndependentOfTheBatchSize) {
  auto model = [](const at::Tensor& ids) {  // copies with errors that depend on the tokens
    auto out = ideal_copier(ids);
    return at::where(ids % 3 == 0, at::zeros_like(out), out);
  };
  auto c1 = small_config();
  auto c2 = small_config();
  c2.batch_tokens = 1;  // one sample per pass
  auto a = measure_curve(model, make_stream(4000), c1);
  auto b = measure_curve(model, make_stream(4000), c2);
  ASSERT_EQ(a.points.size(), b.points.size());
  for (size_t i = 0; i < a.points.size(); ++i) {
    EXPECT_EQ(a.points[i].copy_accs, b.points[i].copy_accs);
    EXPECT_EQ(a.points[i].lm_accs, b.points[i].lm_accs);
  }
}

TEST(ForgettingMeasure, AFailedLengthIsRecordedAndTheSweepGoesOn) {
  auto model = [](const at::Tensor& ids) -> at::Tensor {
    if (ids.size(1) == 2 * 36 + 3) throw std::runtime_error("CUDA out of memory. Tried to allocate 2 GiB\nbacktrace");
    return ideal_copier(ids);
  };
  auto curve = measure_curve(model, make_stream(4000), small_config());  // lengths 8, 22, 36, 50, 64
  ASSERT_EQ(curve.points.size(), 5u);
  EXPECT_FALSE(curve.complete);
  EXPECT_FALSE(curve.points[2].ok());
  EXPECT_EQ(curve.points[2].error, "CUDA out of memory. Tried to allocate 2 GiB");  // first line only
  EXPECT_TRUE(curve.points[3].ok());
  EXPECT_TRUE(curve.points[4].ok());
  // The failed length never holds: the headline takes the longest length that does (64, the
  // last tested, so "> 64"); the prefix rule stops at the failure.
  EXPECT_EQ(curve.fine.value, 64);
  EXPECT_TRUE(curve.fine.censored);
  EXPECT_EQ(curve.fine_prefix.value, 22);
  EXPECT_FALSE(curve.fine_prefix.censored);
}

TEST(ForgettingMeasure, OutOfMemoryWithSeveralSamplesRetriesWithFewer) {
  int calls_with_many = 0;
  auto model = [&](const at::Tensor& ids) -> at::Tensor {
    if (ids.size(0) > 2) {
      ++calls_with_many;
      throw std::runtime_error("out of memory");
    }
    return ideal_copier(ids);
  };
  auto curve = measure_curve(model, make_stream(4000), small_config());
  EXPECT_TRUE(curve.complete);
  EXPECT_GT(calls_with_many, 0);
  EXPECT_EQ(curve.fine.value, 64);
}

// TorchScript models built here, as a Python export would be.
std::filesystem::path save_script(const std::string& name, const std::string& forward) {
  torch::jit::Module m(name);
  m.define(forward);
  auto file = std::filesystem::temp_directory_path() / ("lrahost-" + name + "-" + std::to_string(::getpid()) + ".pt");
  m.save(file.string());
  return file;
}

TEST(ForgettingTorchScript, AScriptedIdealCopierAndAContextBlindModel) {
  // One-hot logits over 258 ids; copier: position p >= second bos predicts ids[p - L].
  auto copier = save_script("copier", R"(
def forward(self, ids):
    T = ids.size(1)
    L = (T - 3) // 2
    pred = ids.clone()
    pred[0, L + 1 : 2 * L + 1] = ids[0, 1 : L + 1]
    return torch.zeros([1, T, 258]).scatter_(2, pred.unsqueeze(2), 1.0)
)");
  auto blind = save_script("blind", R"(
def forward(self, ids):
    logits = torch.zeros([1, ids.size(1), 258]).scatter_(2, ids.unsqueeze(2), 1.0)
    return (logits, ids)
)");
  TorchScriptLM copy_model(copier, at::kCPU), blind_model(blind, at::kCPU);
  auto c = small_config();
  c.max_batch = 1;
  auto good = measure_curve([&](const at::Tensor& ids) { return copy_model.argmax(ids); }, make_stream(4000), c);
  EXPECT_EQ(good.fine.value, 64);
  EXPECT_TRUE(good.fine.censored);
  EXPECT_EQ(copy_model.vocab_size(), 258);
  auto none = measure_curve([&](const at::Tensor& ids) { return blind_model.argmax(ids); }, make_stream(4000), c);
  EXPECT_EQ(none.coarse.value, 0);
  std::filesystem::remove(copier);
  std::filesystem::remove(blind);
}

TEST(ForgettingTorchScript, WrongOutputsAndFilesAreClearErrors) {
  auto flat = save_script("flat", R"(
def forward(self, ids):
    return torch.zeros([1, ids.size(1)])
)");
  TorchScriptLM m(flat, at::kCPU);
  try {
    m.argmax(at::zeros({1, 5}, at::kLong));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::plugin);
    EXPECT_NE(std::string(e.what()).find("[1, T, V]"), std::string::npos) << e.what();
  }
  std::filesystem::remove(flat);
  try {
    TorchScriptLM missing("/nonexistent/model.pt", at::kCPU);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.pt"), std::string::npos);
  }
}

TEST(Rotary, DotProductsDependOnlyOnTheDistance) {
  torch::manual_seed(0);
  auto q = torch::randn({1, 1, 1, 8}).expand({1, 1, 12, 8}).contiguous();
  auto k = torch::randn({1, 1, 1, 8}).expand({1, 1, 12, 8}).contiguous();
  auto rq = lra::ops::rotary_embed(q, 10000.0), rk = lra::ops::rotary_embed(k, 10000.0);
  auto dot = [&](int64_t m, int64_t n) { return (rq[0][0][m] * rk[0][0][n]).sum().item<double>(); };
  EXPECT_NEAR(dot(5, 2), dot(9, 6), 1e-5);
  EXPECT_NEAR(dot(3, 3), dot(11, 11), 1e-5);
  EXPECT_GT(std::abs(dot(5, 2) - dot(5, 4)), 1e-4);  // and do depend on it
  // Position 0 is not rotated; norms are preserved.
  EXPECT_TRUE(torch::allclose(rq[0][0][0], q[0][0][0]));
  EXPECT_NEAR(rq.norm().item<double>(), q.norm().item<double>(), 1e-4);
}

ModelConfig tiny_lm_config() {
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

TEST(CausalLM, LogitsAtAPositionIgnoreLaterTokens) {
  torch::manual_seed(0);
  CausalLM lm(CausalLMSpec{tiny_lm_config()}, make_reference_attention);
  lm->eval();
  auto ids = torch::randint(0, 256, {2, 20}, torch::kLong);
  auto changed = ids.clone();
  changed.narrow(1, 12, 8).random_(0, 256);
  auto a = lm->forward(ids), b = lm->forward(changed);
  EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 20, kByteVocab}));
  EXPECT_TRUE(torch::allclose(a.narrow(1, 0, 12), b.narrow(1, 0, 12), 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(a.narrow(1, 12, 8), b.narrow(1, 12, 8)));
}

TEST(CausalLM, ANonCausalMixerFactoryIsTold) {
  bool saw_causal = false, saw_rotary = false;
  CausalLM lm(CausalLMSpec{tiny_lm_config()}, [&](const lra::MixerSpec& s) {
    saw_causal = s.causal;
    saw_rotary = s.rotary_base > 0;
    return make_reference_attention(s);
  });
  EXPECT_TRUE(saw_causal);
  EXPECT_TRUE(saw_rotary);
}

TEST(CausalLMTraining, AFewHundredStepsLearnARepetitiveText) {
  torch::manual_seed(0);
  // A text with obvious structure: a repeated phrase.
  std::string phrase = "the quick brown fox jumps over the lazy dog. ";
  std::vector<int32_t> text;
  while (text.size() < 20000) text.insert(text.end(), phrase.begin(), phrase.end());
  std::vector<int32_t> held(text.begin(), text.begin() + 4000);
  CausalLM lm(CausalLMSpec{tiny_lm_config()}, make_reference_attention);
  LmTrainOptions o;
  o.seq_len = 32;
  o.train.steps = 150;
  o.train.batch_size = 8;
  o.train.lr = 3e-3;
  o.train.schedule = "constant*wsd";
  o.train.warmup = 10;
  o.train.decay_steps = 30;
  o.train.beta1 = 0.9;
  o.train.beta2 = 0.95;
  o.train.eps = 1e-8;
  o.train.weight_decay = 0.1;
  o.train.grad_clip = 1.0;
  o.train.eval_every = 150;
  o.train.eval_batch_size = 16;
  o.train.steps_per_cycle = 1;
  auto log = spdlog::logger("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  const double before = held_out_loss(lm, held, 32, 16, 64, torch::kCPU, false).first;
  auto r = train_causal_lm(lm, text, held, o, log);
  EXPECT_NEAR(before, std::log(258.0), 0.5);  // untrained: about uniform
  EXPECT_LT(r.test_loss, 0.5);                // the phrase is learned
  EXPECT_EQ(r.steps, 150);
  EXPECT_EQ(r.history.back()["step"], 150);
}

TEST(CausalLMTraining, TooShortATextIsADataError) {
  CausalLM lm(CausalLMSpec{tiny_lm_config()}, make_reference_attention);
  LmTrainOptions o;
  o.seq_len = 32;
  o.train.batch_size = 8;
  auto log = spdlog::logger("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  try {
    train_causal_lm(lm, std::vector<int32_t>(100, 1), std::vector<int32_t>(100, 1), o, log);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
  }
}

}  // namespace
}  // namespace lra::host::forgetting
