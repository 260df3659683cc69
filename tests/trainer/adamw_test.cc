#include "trainer/cpu/ops/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace bm::train::cpu {
namespace {

TEST(AdamWTest, MatchesTheFormulaInDouble) {
  std::vector<float> p = {1.0f, -2.0f, 0.5f}, g = {0.1f, -0.3f, 2.0f}, m(3, 0.0f), v(3, 0.0f);
  std::vector<double> pd(p.begin(), p.end()), md(3, 0.0), vd(3, 0.0);
  const double lr = 0.01, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1, scale = 0.5;
  for (int t = 1; t <= 3; ++t) {
    AdamWUpdate(p.data(), g.data(), m.data(), v.data(), 3, lr, b1, b2, eps, wd, scale, t);
    for (int i = 0; i < 3; ++i) {
      double gi = g[i] * scale;
      md[i] = b1 * md[i] + (1 - b1) * gi;
      vd[i] = b2 * vd[i] + (1 - b2) * gi * gi;
      double mh = md[i] / (1 - std::pow(b1, t)), vh = vd[i] / (1 - std::pow(b2, t));
      pd[i] -= lr * (mh / (std::sqrt(vh) + eps) + wd * pd[i]);
    }
  }
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[i], pd[i], 1e-6);
}

TEST(AdamWTest, SumOfSquaresAndClip) {
  std::vector<float> x(100000, 0.5f);
  EXPECT_DOUBLE_EQ(SumOfSquares(x.data(), x.size()), 25000.0);
  EXPECT_EQ(ClipScale(0.5f, 1.0f), 1.0f);
  EXPECT_NEAR(ClipScale(4.0f, 1.0f), 0.25f, 1e-6);
  EXPECT_EQ(ClipScale(4.0f, 0.0f), 1.0f);
}

}  // namespace
}  // namespace bm::train::cpu
