// Decoding token by token (lra/mixer.h, ABI 1.3) gives the causal forward's
// numbers: for every built mixer that decodes, in float64, the output of
// decode_step at position t equals row t of forward(x, {}) on the whole
// sequence, with and without rotary positions where the mixer takes them.
// The sequence (70) is longer than `local`'s block (50), so a step that
// crosses a block boundary is checked too. The Python plugin decodes through
// a class's own decode_start/decode_step (sdk/examples/python/retention.py).
// A prefill (ABI 1.6) of any prompt leaves the state its steps leave.
#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "lra/abi.h"
#include "mixer_harness.h"
#include "plugins/loader.h"
#include "plugins/mixer_options.h"

using namespace lra::test;

namespace {

constexpr int64_t kLength = 70, kBatch = 2, kWidth = 32;

// Largest difference of the steps from the forward, relative to the forward's scale.
double step_difference(lra::Mixer& m) {
  torch::NoGradGuard no_grad;
  m.to(torch::kDouble);
  m.eval();
  const auto x = random_input(kBatch, kLength, kWidth, 3).to(torch::kDouble);
  const auto y = m.forward(x, {});
  auto state = m.decode_start(kBatch, x.options());
  double worst = 0;
  for (int64_t t = 0; t < kLength; ++t) {
    const auto yt = m.decode_step(x.select(1, t), state, t);
    EXPECT_EQ(yt.sizes(), (std::vector<int64_t>{kBatch, kWidth})) << "step " << t;
    worst = std::max(worst, (yt - y.select(1, t)).abs().max().item<double>());
  }
  return worst / std::max(1.0, y.abs().max().item<double>());
}

TEST(DecodeParity, EveryDecodingMixerStepsToItsCausalForward) {
  std::set<std::string> decoding;
  for (const auto& name : built_mixers()) {
    if (name == "python" || !(mixer_capabilities(name) & LRA_CAP_CAUSAL)) continue;
    std::vector<double> bases{0.0};
    if (mixer_capabilities(name) & LRA_CAP_ROTARY) bases.push_back(10000.0);
    for (const double base : bases) {
      SCOPED_TRACE(name + (base > 0 ? " with rotary positions" : ""));
      auto spec = small_spec(kWidth, 4, kLength + 10, /*causal=*/true);
      spec.rotary_base = base;
      auto m = make_mixer(name, spec, {}, 1);
      if (!m->decodes()) continue;
      decoding.insert(name);
      const double d = step_difference(*m);
      EXPECT_LT(d, 1e-9) << "decode_step differs from the causal forward by " << d << " of its scale";
      std::cout << "[  decode  ] " << name << (base > 0 ? " (rotary)" : "") << ": " << kLength
                << " steps, largest difference " << d << " of the forward's scale\n";
    }
  }
  // The mixers whose authors' claim is constant (or bounded) memory per token, and the KV-cache baseline.
  for (const char* name : {"transformer", "linear_transformer", "local", "s4d", "mamba2"})
    EXPECT_TRUE(decoding.count(name)) << name << " does not decode token by token";
}

// A prefill (ABI 1.6) of the first `prompt` positions, then steps: how far
// the prompt's outputs and the later steps are from the causal forward, and
// how far the prefilled state's tensors are from those of `prompt` steps.
struct PrefillGap {
  double outputs = 0, state = 0;
};
PrefillGap prefill_difference(lra::Mixer& m, int64_t prompt) {
  torch::NoGradGuard no_grad;
  m.to(torch::kDouble);
  m.eval();
  const auto x = random_input(kBatch, kLength, kWidth, 5).to(torch::kDouble);
  const auto y = m.forward(x, {});
  const double scale = std::max(1.0, y.abs().max().item<double>());
  auto stepped = m.decode_start(kBatch, x.options());
  for (int64_t t = 0; t < prompt; ++t) m.decode_step(x.select(1, t), stepped, t);
  auto state = m.decode_start(kBatch, x.options());
  const auto yp = m.prefill(x.narrow(1, 0, prompt), state);
  PrefillGap g;
  EXPECT_EQ(yp.sizes(), x.narrow(1, 0, prompt).sizes());
  g.outputs = (yp - y.narrow(1, 0, prompt)).abs().max().item<double>() / scale;
  EXPECT_EQ(state.size(), stepped.size());
  for (size_t i = 0; i < std::min(state.size(), stepped.size()); ++i) {
    EXPECT_EQ(state[i].sizes(), stepped[i].sizes()) << "state tensor " << i;
    if (state[i].sizes() == stepped[i].sizes() && state[i].numel() > 0)
      g.state = std::max(g.state, (state[i] - stepped[i]).abs().max().item<double>() /
                                      std::max(1.0, stepped[i].abs().max().item<double>()));
  }
  for (int64_t t = prompt; t < kLength; ++t)
    g.outputs = std::max(g.outputs, (m.decode_step(x.select(1, t), state, t) - y.select(1, t)).abs().max().item<double>() / scale);
  return g;
}

// Prompts that end inside a block of `local` (50), on its boundary, and past it.
TEST(DecodeParity, EveryBuiltInPrefillsInParallelToTheStepsState) {
  for (const char* name : {"transformer", "linear_transformer", "local", "s4d", "mamba2"}) {
    std::vector<double> bases{0.0};
    if (mixer_capabilities(name) & LRA_CAP_ROTARY) bases.push_back(10000.0);
    for (const double base : bases)
      for (const int64_t prompt : {1, 37, 50, 51, 69}) {
        SCOPED_TRACE(std::string(name) + (base > 0 ? " with rotary positions" : "") + ", prompt of " +
                     std::to_string(prompt));
        auto spec = small_spec(kWidth, 4, kLength + 10, /*causal=*/true);
        spec.rotary_base = base;
        auto m = make_mixer(name, spec, {}, 1);
        ASSERT_TRUE(m->prefills_in_parallel());
        const PrefillGap g = prefill_difference(*m, prompt);
        EXPECT_LT(g.outputs, 1e-9);
        EXPECT_LT(g.state, 1e-9);
      }
  }
}

TEST(DecodeParity, AMixerThatDoesNotDecodeSaysSo) {
  // The first built mixer without decoding steps: the SDK's defaults refuse, naming why.
  for (const auto& name : built_mixers()) {
    if (name == "python") continue;
    auto m = make_mixer(name, small_spec(kWidth, 4, kLength, (mixer_capabilities(name) & LRA_CAP_CAUSAL) != 0), {}, 1);
    if (m->decodes()) continue;
    try {
      m->decode_start(1, torch::TensorOptions());
      ADD_FAILURE() << name << ": decode_start of a mixer that does not decode did not throw";
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::plugin);
      EXPECT_NE(std::string(e.what()).find("does not decode"), std::string::npos) << e.what();
    }
    return;  // one is enough: the default is the SDK's, the same for every plugin
  }
  GTEST_SKIP() << "every built mixer decodes";
}

TEST(DecodeParity, APythonMixerDecodesThroughItsOwnSteps) {
  const auto names = built_mixers();
  if (std::find(names.begin(), names.end(), "python") == names.end()) GTEST_SKIP() << "no Python plugin in this build";
  const auto& p = lra::host::load_plugin(std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/retention.py:Retention",
                                         LRA_KIND_MIXER);
  torch::manual_seed(1);
  std::shared_ptr<lra::Mixer> m;
  const auto st = p.mixer().create(small_spec(kWidth, 4, kLength + 10, true), lra::host::resolve_mixer_options(p, {}), &m);
  ASSERT_TRUE(st.ok()) << st.message;
  ASSERT_TRUE(m->decodes()) << "retention.py defines decode_start and decode_step";
  const double d = step_difference(*m);
  EXPECT_LT(d, 1e-9) << "retention.py's decode_step differs from its forward by " << d;
  std::cout << "[  decode  ] python retention.py: largest difference " << d << " of the forward's scale\n";
  // Its prefill (one decayed sum) leaves the steps' state.
  ASSERT_TRUE(m->prefills_in_parallel()) << "retention.py defines prefill";
  const PrefillGap g = prefill_difference(*m, 40);
  EXPECT_LT(g.outputs, 1e-9);
  EXPECT_LT(g.state, 1e-9);
  // The softmax example defines no steps: it does not decode.
  const auto& q = lra::host::load_plugin(
      std::string(LRA_SOURCE_DIR) + "/sdk/examples/python/softmax_attention.py:SoftmaxAttention", LRA_KIND_MIXER);
  std::shared_ptr<lra::Mixer> n;
  ASSERT_TRUE(q.mixer().create(small_spec(kWidth, 4, kLength, true), lra::host::resolve_mixer_options(q, {}), &n).ok());
  EXPECT_FALSE(n->decodes());
}

}  // namespace
