// Every built-in mixer draws the same attention-dropout masks however the
// batch is split over ranks or micro-batches (lra/dropout.h, DropoutRows): a
// forward pass of four examples equals its two halves run as two passes, in
// training mode with dropout on. This test executable offers the pass record
// lrahost exports (host/dropout_rows.cpp), so the plugins resolve it here.
#include <lra/dropout.h>

#include "mixer_harness.h"

using namespace lra::test;

namespace {

// The forward pass holding examples [first, first + x.size(0)) of a global
// batch of `global`, with the generator as every rank has it at that step
// (mixers that draw other randomness per pass, e.g. LSH rotations, draw alike).
torch::Tensor pass(lra::Mixer& m, const torch::Tensor& x, const torch::Tensor& mask, int64_t first, int64_t global) {
  torch::manual_seed(7);
  const lra::ops::DropoutRows rows(/*seed=*/1234, first, x.size(0), global);
  return m.forward(x, mask);
}

}  // namespace

TEST(DropoutSplit, EveryBuiltInMixerEqualsItsHalvesWithAttentionDropoutOn) {
  const auto names = built_mixers();
  ASSERT_GE(names.size(), 13u) << "plugins in " << LRA_PLUGIN_DIR;
  std::vector<std::pair<std::string, lra::Params>> cases;
  for (const auto& name : names) cases.push_back({name, {}});
  // Masks drawn chunk by chunk, where the chunks depend on the batch size.
  cases.push_back({"sparse_transformer", {{"block_size", int64_t{8}}, {"c", int64_t{2}}, {"chunk_elements", int64_t{1}}}});
  for (const auto& [name, options] : cases) {
    auto spec = small_spec(32, 4, 64, /*causal=*/false);
    spec.attention_dropout = 0.5;
    auto m = build_mixer(name, spec, options);
    m->train();
    const auto x = random_input(4, 64, 32, 3);
    const auto mask = lengths_mask(64, {64, 50, 64, 33});
    torch::NoGradGuard no_grad;
    const auto whole = pass(*m, x, mask, 0, 4);
    const auto halves = torch::cat({pass(*m, x.narrow(0, 0, 2), mask.narrow(0, 0, 2), 0, 4),
                                    pass(*m, x.narrow(0, 2, 2), mask.narrow(0, 2, 2), 2, 4)});
    EXPECT_LE(max_abs_diff(whole, halves), 1e-5) << name;
  }
}

TEST(DropoutSplit, TheTestSeesDropout) {
  // Not vacuous: with dropout on, the transformer's training output differs
  // from its evaluation output, and another update's seed gives other masks.
  auto spec = small_spec();
  spec.attention_dropout = 0.5;
  auto m = make_mixer("transformer", spec);
  const auto x = random_input(4, 64, 32, 3);
  const auto mask = lengths_mask(64, {64, 64, 64, 64});
  torch::NoGradGuard no_grad;
  const auto evaluated = m->forward(x, mask);
  m->train();
  const auto trained = pass(*m, x, mask, 0, 4);
  EXPECT_GT(max_abs_diff(trained, evaluated), 1e-3);
  torch::manual_seed(7);
  const lra::ops::DropoutRows other(/*seed=*/99, 0, 4, 4);
  EXPECT_GT(max_abs_diff(m->forward(x, mask), trained), 1e-3);
}
