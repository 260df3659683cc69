#include "engine/report/compare.h"

#include <gtest/gtest.h>

#include "tests/engine/report/fixtures.h"

namespace bm::report {
namespace {

MeasuredTarget Target(const std::string& name, const std::string& run) {
  return {name, "pretrain", {testing::LoadRun(run)}};
}

TEST(Compare, SameConfigOnTwoPlatformsIsAligned) {
  Comparison c = Compare(Target("llama2_7b.h100", "llama2_7b.h100.r1"),
                         Target("llama2_7b.a800", "llama2_7b.a800"));
  ASSERT_TRUE(c.alignment) << c.alignment_note;
  EXPECT_TRUE(c.aligned());
  EXPECT_LT(c.alignment->mean_rel_diff, 0.01);
  for (const Difference& d : c.differences) EXPECT_TRUE(d.platform) << d.field;
  testing::ExpectGolden("compare_same_config.md", RenderComparisonMarkdown(c));
}

// Two CPU runs whose OpenBLAS ran other kernels differ by a platform fact.
TEST(Compare, NamesOtherBlasKernelsAsAPlatformDifference) {
  auto run = [](const std::string& core) {
    Measurement m;
    m.metrics = {{"config", {{"device", "cpu"}, {"lr", 0.001}}},
                 {"platform", {{"blas", {{"version", "0.3.21"}, {"core", core}}}}}};
    return MeasuredTarget{"cpu." + core, "pretrain", {m}};
  };
  Comparison c = Compare(run("SkylakeX"), run("Prescott"));
  bool found = false;
  for (const Difference& d : c.differences) {
    if (d.field != "platform.blas.core") continue;
    found = true;
    EXPECT_TRUE(d.platform);
    EXPECT_EQ(d.a, "SkylakeX");
    EXPECT_EQ(d.b, "Prescott");
  }
  EXPECT_TRUE(found) << RenderComparisonMarkdown(c);
}

TEST(Compare, ChangedLearningRateFailsAndSaysWhy) {
  Comparison c = Compare(Target("llama2_7b.h100", "llama2_7b.h100.r1"),
                         Target("llama2_7b.h100_lr2x", "llama2_7b.h100_lr2x"));
  ASSERT_TRUE(c.alignment) << c.alignment_note;
  EXPECT_FALSE(c.aligned());
  EXPECT_GT(c.alignment->mean_rel_diff, 0.02);
  EXPECT_EQ(c.alignment->compared_steps, 80);
  EXPECT_EQ(c.alignment->worst.size(), 5u);
  std::string verdict = c.Verdict();
  EXPECT_NE(verdict.find("NOT ALIGNED"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("config.lr 0.0003 \u2192 0.0006"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("; largest relative gap "), std::string::npos) << verdict;
  EXPECT_EQ(c.alignment->largest.step, c.alignment->worst[0].step);
  EXPECT_EQ(c.alignment->largest.rel_diff, c.alignment->worst[0].rel_diff);
  testing::ExpectGolden("compare_lr_changed.md", RenderComparisonMarkdown(c));
  testing::ExpectGolden("compare_lr_changed.json", RenderComparisonJson(c));
}

TEST(Compare, WithoutLossCurveAlignmentIsNotChecked) {
  MeasuredTarget a = Target("llama2_7b.h100", "llama2_7b.h100.r1");
  MeasuredTarget b = Target("tiny.eval", "tiny.eval");
  Comparison c = Compare(a, b);
  EXPECT_FALSE(c.alignment);
  EXPECT_FALSE(c.aligned());
  EXPECT_EQ(c.Verdict(), "loss alignment not checked: tiny.eval has no loss curve (log.jsonl)");
}

// The verdict names the check once: "loss alignment not checked: no step from ...", not
// "loss alignment not checked: loss alignment: no step from ...".
TEST(Compare, NoCommonStepVerdictSaysLossAlignmentOnce) {
  MeasuredTarget a = Target("llama2_7b.h100", "llama2_7b.h100.r1");
  Comparison c = Compare(a, a, {1000000, 0.02, 5});
  EXPECT_FALSE(c.alignment);
  EXPECT_EQ(
      c.Verdict().rfind("loss alignment not checked: no step from 1000000 on in both curves (", 0),
      0u)
      << c.Verdict();
}

TEST(Compare, IdenticalRunsHaveNoDifferences) {
  MeasuredTarget a = Target("x", "tiny.cpu");
  Comparison c = Compare(a, a);
  EXPECT_TRUE(c.differences.empty());
  EXPECT_TRUE(c.aligned());
  EXPECT_EQ(c.alignment->mean_rel_diff, 0.0);
}

}  // namespace
}  // namespace bm::report
