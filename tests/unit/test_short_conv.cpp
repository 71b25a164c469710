// The host's gated short convolution (model/short_conv.h): Zoology's BaseConv,
// causal, and its decoding steps equal its forward.
#include <gtest/gtest.h>

#include "model/random_state.h"
#include "model/short_conv.h"
#include "plugins/decode_check.h"

using namespace lra::host;

namespace {

lra::MixerSpec conv_spec() {
  lra::MixerSpec spec;
  spec.d_model = 8;
  spec.heads = 1;
  spec.qkv_dim = 8;
  spec.max_len = 16;
  spec.causal = true;
  return spec;
}

}  // namespace

TEST(ShortConv, IsCausalAndDecodesAsItsForward) {
  const lra::MixerSpec spec = conv_spec();
  torch::manual_seed(1);
  auto conv = make_gated_short_conv(spec, 3);
  conv->eval();
  torch::NoGradGuard g;
  auto x = torch::randn({2, 10, 8}, torch::kDouble);
  conv->to(torch::kDouble);
  const auto y = conv->forward(x, {});
  // Position 0 sees only itself: conv(u0) = w[2] u0 + b.
  auto x2 = x.clone();
  x2.narrow(1, 5, 5).normal_();
  EXPECT_TRUE(torch::allclose(conv->forward(x2, {}).narrow(1, 0, 5), y.narrow(1, 0, 5)));
  ASSERT_TRUE(conv->decodes());
  auto state = conv->decode_start(2, x.options());
  for (int64_t t = 0; t < 10; ++t)
    EXPECT_LT((conv->decode_step(x.select(1, t), state, t) - y.select(1, t)).abs().max().item<double>(), 1e-12) << t;
  // Its state is the last kernel - 1 inputs, whatever the length.
  EXPECT_EQ(state[0].sizes(), (std::vector<int64_t>{2, 2, 8}));
}

// The decode check reseeds LibTorch's generator and puts it back: a run it guards draws the same stream.
TEST(ShortConv, TheDecodeCheckLeavesTheGeneratorAsItFoundIt) {
  const lra::MixerSpec spec = conv_spec();
  torch::manual_seed(5);
  const auto before = cpu_generator_state().clone();
  const auto check = check_decode_parity([](const lra::MixerSpec& s) { return make_gated_short_conv(s, 3); }, spec,
                                         c10::Device(c10::kCPU), 7);
  EXPECT_EQ(check.status, "passed") << check.detail;
  EXPECT_TRUE(torch::equal(cpu_generator_state(), before));
}
