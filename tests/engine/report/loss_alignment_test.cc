#include "engine/report/loss_alignment.h"

#include <gtest/gtest.h>

namespace bm::report {
namespace {

std::vector<LossPoint> Curve(int64_t first, int64_t last, double loss) {
  std::vector<LossPoint> c;
  for (int64_t s = first; s <= last; ++s) c.push_back({s, loss});
  return c;
}

TEST(LossAlignment, StepsBeforeFromStepDoNotCount) {
  std::vector<LossPoint> ref = Curve(1, 40, 2.0);
  std::vector<LossPoint> cand = Curve(1, 40, 2.0);
  for (int i = 0; i < 20; ++i) cand[i].loss = 9.0;  // steps 1..20 wildly off
  Result<Alignment> a = CheckLossAlignment(ref, cand);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(a->pass);
  EXPECT_EQ(a->compared_steps, 20);
  EXPECT_EQ(a->first_step, 21);
  EXPECT_EQ(a->mean_rel_diff, 0.0);
}

TEST(LossAlignment, MeanRelativeDifferenceAgainstTolerance) {
  std::vector<LossPoint> ref = Curve(21, 30, 2.0);
  std::vector<LossPoint> cand = Curve(21, 30, 2.0);
  cand[3].loss = 2.2;  // 10% at step 24, 1% on average
  Result<Alignment> a = CheckLossAlignment(ref, cand);
  ASSERT_TRUE(a.ok());
  EXPECT_NEAR(a->mean_rel_diff, 0.01, 1e-12);
  EXPECT_TRUE(a->pass);
  ASSERT_FALSE(a->worst.empty());
  EXPECT_EQ(a->worst[0].step, 24);
  EXPECT_NEAR(a->worst[0].rel_diff, 0.1, 1e-12);
  Result<Alignment> strict = CheckLossAlignment(ref, cand, {21, 0.01, 3});
  ASSERT_TRUE(strict.ok());
  EXPECT_FALSE(strict->pass);  // 1% is not below 1%
  EXPECT_EQ(strict->worst.size(), 3u);
}

// The largest gap, which the mean hides: 10% at step 24 (2.2 against 2.0), found also when no
// worst steps are listed; a bigger gap before from_step does not count.
TEST(LossAlignment, LargestGapIsReportedEvenWithoutWorstSteps) {
  std::vector<LossPoint> ref = Curve(1, 30, 2.0);
  std::vector<LossPoint> cand = Curve(1, 30, 2.0);
  cand[23].loss = 2.2;  // step 24
  cand[26].loss = 1.9;  // step 27: 5%
  cand[4].loss = 4.0;   // step 5: before step 21
  Result<Alignment> a = CheckLossAlignment(ref, cand, {21, 0.02, 0});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(a->worst.empty());
  EXPECT_EQ(a->largest.step, 24);
  EXPECT_DOUBLE_EQ(a->largest.reference, 2.0);
  EXPECT_DOUBLE_EQ(a->largest.candidate, 2.2);
  EXPECT_NEAR(a->largest.rel_diff, 0.1, 1e-12);
}

TEST(LossAlignment, StepsInOneCurveOnlyAreCounted) {
  Result<Alignment> a = CheckLossAlignment(Curve(1, 50, 2.0), Curve(1, 40, 2.0));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->compared_steps, 20);
  EXPECT_EQ(a->only_reference, 10);
  EXPECT_EQ(a->only_candidate, 0);
}

TEST(LossAlignment, ConfigurableFromStep) {
  Result<Alignment> a = CheckLossAlignment(Curve(1, 50, 2.0), Curve(1, 50, 2.0), {41, 0.02, 5});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->compared_steps, 10);
}

TEST(LossAlignment, NoCommonStepsIsAnError) {
  Result<Alignment> a = CheckLossAlignment(Curve(1, 20, 2.0), Curve(1, 20, 2.0));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.status().message(),
            "no step from 21 on in both curves (reference: steps 1–20; "
            "candidate: steps 1–20)");
}

TEST(LossAlignment, ZeroReferenceLossAndBadOptionsAreErrors) {
  std::vector<LossPoint> ref = Curve(21, 22, 0.0);
  EXPECT_EQ(CheckLossAlignment(ref, ref).status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(CheckLossAlignment(Curve(21, 22, 1), Curve(21, 22, 1), {21, 0, 5}).status().code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace bm::report
