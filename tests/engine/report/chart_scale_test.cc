#include "engine/report/chart_scale.h"

#include <gtest/gtest.h>

namespace bm::report {
namespace {

TEST(ChartScale, LinearTicksAreRoundNumbers) {
  EXPECT_EQ(LinearTicks(0, 10), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(LinearTicks(2.3, 9.7), (std::vector<double>{4, 6, 8}));
  EXPECT_TRUE(LinearTicks(1, 1).empty());
}

TEST(ChartScale, NiceRangeWidensToTicks) {
  double lo = 2.3, hi = 9.7;
  NiceRange(lo, hi);
  EXPECT_EQ(lo, 2);
  EXPECT_EQ(hi, 10);
  double flat_lo = 5, flat_hi = 5;
  NiceRange(flat_lo, flat_hi);
  EXPECT_LT(flat_lo, 5);
  EXPECT_GT(flat_hi, 5);
}

TEST(ChartScale, LogTicksWithinOneDecadeAndAcrossMany) {
  EXPECT_EQ(LogTicks(2, 11), (std::vector<double>{2, 3, 4, 5, 6, 8, 10}));
  std::vector<double> wide = LogTicks(0.001, 1000);
  EXPECT_LE(wide.size(), 8u);
  EXPECT_EQ(wide.front(), 0.001);
  EXPECT_TRUE(LogTicks(0, 1).empty());
}

TEST(ChartScale, ScaleMapsEndsToPixels) {
  Scale lin{0, 10, 100, 0, false};
  EXPECT_EQ(lin(0), 100);
  EXPECT_EQ(lin(10), 0);
  EXPECT_EQ(lin(5), 50);
  Scale log{1, 100, 0, 200, true};
  EXPECT_NEAR(log(10), 100, 1e-9);
}

TEST(ChartScale, TickLabelsAndEscaping) {
  EXPECT_EQ(TickLabel(0.5), "0.5");
  EXPECT_EQ(TickLabel(2), "2");
  EXPECT_EQ(TickLabel(10000), "10000");
  EXPECT_EQ(TickLabel(0.0001), "0.0001");
  EXPECT_EQ(XmlEscape("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
}

}  // namespace
}  // namespace bm::report
