// lra/dropout.h: the CPU dropout's mask — the keep rate, the scale, the
// gradient, reproducibility from torch::manual_seed, independence of the
// thread count, no correlation between neighbouring elements, every float
// type — and the identity outside training.
#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "lra/dropout.h"

namespace {

TEST(Dropout, KeepsOneMinusPAndScalesTheRest) {
  torch::manual_seed(0);
  for (double p : {0.1, 0.5, 0.9}) {
    const int64_t n = 1 << 20;
    const auto x = torch::ones({n});
    const auto y = lra::ops::dropout(x, p, true);
    const auto kept = y.ne(0);
    const double rate = kept.to(torch::kDouble).mean().item<double>();
    const double sd = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(rate, 1 - p, 5 * sd) << "p " << p;
    // Kept elements carry exactly 1/(1-p) (float), dropped ones 0.
    EXPECT_TRUE(y.masked_select(kept).eq(static_cast<float>(1.0 / (1 - p))).all().item<bool>()) << "p " << p;
  }
}

TEST(Dropout, NeighboursAreUncorrelated) {
  // Two decisions come from one 64-bit draw: its halves must be independent,
  // and so must consecutive draws.
  torch::manual_seed(1);
  const auto k = lra::ops::dropout(torch::ones({1 << 20}), 0.5, true).ne(0).to(torch::kDouble);
  const auto even = k.slice(0, 0, k.size(0), 2), odd = k.slice(0, 1, k.size(0), 2);
  const auto a = k.slice(0, 0, k.size(0) - 1), b = k.slice(0, 1, k.size(0));
  const double sd = 1.0 / std::sqrt(static_cast<double>(k.size(0) / 2));
  auto corr = [](const torch::Tensor& u, const torch::Tensor& v) {
    const auto cu = u - u.mean(), cv = v - v.mean();
    return ((cu * cv).mean() / (cu.std(false) * cv.std(false))).item<double>();
  };
  EXPECT_LT(std::abs(corr(even, odd)), 5 * sd);
  EXPECT_LT(std::abs(corr(a, b)), 5 * sd);
}

TEST(Dropout, ReproducibleFromTheSeedAndFreshEachCall) {
  const auto x = torch::randn({64, 257});
  torch::manual_seed(7);
  const auto first = lra::ops::dropout(x, 0.3, true), second = lra::ops::dropout(x, 0.3, true);
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(lra::ops::dropout(x, 0.3, true), first));
  EXPECT_FALSE(torch::equal(first, second));
}

TEST(Dropout, SameMaskWhateverTheThreadCount) {
  const int threads = at::get_num_threads();
  const auto x = torch::ones({1 << 18});
  at::set_num_threads(1);
  torch::manual_seed(3);
  const auto one = lra::ops::dropout(x, 0.2, true);
  at::set_num_threads(4);
  torch::manual_seed(3);
  const auto four = lra::ops::dropout(x, 0.2, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one, four));
}

TEST(Dropout, GradientIsTheMask) {
  torch::manual_seed(5);
  const auto x = torch::randn({33, 17}, torch::requires_grad());  // odd count: the last pair is half used
  const auto y = lra::ops::dropout(x, 0.25, true);
  y.sum().backward();
  // y = x * mask, so dy/dx = mask = y / x wherever x != 0.
  EXPECT_TRUE(torch::allclose(x.grad(), y.detach() / x.detach(), 1e-5, 1e-6));
}

TEST(Dropout, IdentityOutsideTrainingAndEveryFloatType) {
  const auto x = torch::randn({8, 9});
  EXPECT_TRUE(lra::ops::dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(lra::ops::dropout(x, 0.0, true).is_same(x));
  EXPECT_TRUE(lra::ops::dropout(x, 1.0, true).eq(0).all().item<bool>());
  for (auto t : {torch::kFloat64, torch::kBFloat16, torch::kFloat16}) {
    const auto y = lra::ops::dropout(torch::ones({1000}, t), 0.5, true);
    EXPECT_EQ(y.scalar_type(), t);
    EXPECT_TRUE(y.eq(0).logical_or(y.eq(2)).all().item<bool>());
  }
}

}  // namespace
