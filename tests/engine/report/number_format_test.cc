#include "engine/report/number_format.h"

#include <gtest/gtest.h>

namespace bm::report {
namespace {

TEST(NumberFormat, FixedDecimalsPerQuantity) {
  EXPECT_EQ(FormatValue(Quantity::kTokensPerS, 3912.44), "3,912");
  EXPECT_EQ(FormatValue(Quantity::kTokensPerS, 325924.0), "325,924");
  EXPECT_EQ(FormatValue(Quantity::kTokensPerS, 10348.9), "10,349");
  EXPECT_EQ(FormatValue(Quantity::kTokensPerS, 812.5), "812");  // to nearest even, as printf
  EXPECT_EQ(FormatValue(Quantity::kMfu, 0.47912), "47.9%");
  EXPECT_EQ(FormatValue(Quantity::kMfu, 0.47912, false), "47.9");
  EXPECT_EQ(FormatValue(Quantity::kGiB, 61.8 * 1024 * 1024 * 1024), "62");
  EXPECT_EQ(FormatValue(Quantity::kGiB, 9.96 * 1024 * 1024 * 1024), "10");
  EXPECT_EQ(FormatValue(Quantity::kGiB, 0.4 * 1024 * 1024 * 1024), "0.4");
  EXPECT_EQ(FormatValue(Quantity::kLoss, 3.31249), "3.312");
  EXPECT_EQ(FormatValue(Quantity::kPerplexity, 22.4811), "22.48");
  EXPECT_EQ(FormatValue(Quantity::kAccuracy, 0.4125), "41.2%");  // 41.25 is below .25 in binary
  EXPECT_EQ(FormatValue(Quantity::kRelDiff, 0.0087), "0.87%");
  EXPECT_EQ(FormatValue(Quantity::kJoulesPerToken, 0.17584228), "175.84");  // mJ
  EXPECT_EQ(FormatValue(Quantity::kWatts, 688.04), "688.0");
  EXPECT_EQ(FormatValue(Quantity::kMinutes, 798.372), "13.31");  // seconds shown in minutes
  EXPECT_EQ(FormatPlain(Quantity::kMinutes, 2878.403), "47.97");
  // A quality score to 5 decimals, without trailing zeros: AUC targets differ in the fifth.
  EXPECT_EQ(FormatValue(Quantity::kScore, 0.8029667139053345), "0.80297");
  EXPECT_EQ(FormatValue(Quantity::kScore, 0.80275), "0.80275");
  EXPECT_EQ(FormatValue(Quantity::kScore, 0.34), "0.34");
  EXPECT_EQ(FormatValue(Quantity::kScore, 90.0), "90");
  EXPECT_EQ(FormatValue(Quantity::kScore, 88.51338542754172), "88.51339");
  EXPECT_EQ(FormatValue(Quantity::kScore, 0.000001), "0");
  EXPECT_EQ(FormatPlain(Quantity::kScore, 646.0821975894278), "646.0822");
}

TEST(NumberFormat, PlainNumbersForCsv) {
  EXPECT_EQ(FormatPlain(Quantity::kTokensPerS, 10348.94), "10348.9");
  EXPECT_EQ(FormatPlain(Quantity::kGiB, 61.8 * 1024 * 1024 * 1024), "61.8");
  EXPECT_EQ(FormatPlain(Quantity::kMfu, 0.47912), "47.9");
}

TEST(NumberFormat, GroupsThousandsOfTheIntegerPart) {
  EXPECT_EQ(GroupThousands("1234567.25"), "1,234,567.25");
  EXPECT_EQ(GroupThousands("-1234"), "-1,234");
  EXPECT_EQ(GroupThousands("+999"), "+999");
  EXPECT_EQ(GroupThousands("1000"), "1,000");
  EXPECT_EQ(GroupThousands("0.12345"), "0.12345");
  EXPECT_EQ(GroupThousands(""), "");
}

TEST(NumberFormat, NoNegativeZero) {
  EXPECT_EQ(FormatFixed(-0.00001, 1), "0.0");
  EXPECT_EQ(FormatFixed(-0.06, 1), "-0.1");
}

TEST(NumberFormat, StatShowsRangeOnlyWhenItVaries) {
  EXPECT_EQ(FormatStat(Quantity::kTokensPerS, Stat{3912.4, 3890.1, 3935.7, 3}),
            "3,912 (3,890\u20133,936)");
  EXPECT_EQ(FormatStat(Quantity::kTokensPerS, Stat{3912.4, 3912.1, 3912.3, 3}), "3,912");
  EXPECT_EQ(FormatStat(Quantity::kLoss, Stat{2.5, 2.5, 2.5, 3}), "2.500");
  EXPECT_EQ(FormatStat(Quantity::kMfu, Stat{0.2, 0.1, 0.3, 1}), "20.0%");
  EXPECT_EQ(FormatStat(Quantity::kMfu, Stat{0.1271, 0.1269, 0.1273, 2}), "12.7%");
}

TEST(Stat, MedianMinMaxCount) {
  std::optional<Stat> s = Summarize({3.0, 1.0, 2.0});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->median, 2.0);
  EXPECT_EQ(s->min, 1.0);
  EXPECT_EQ(s->max, 3.0);
  EXPECT_EQ(s->n, 3);
  EXPECT_EQ(Summarize({4.0, 1.0, 2.0, 3.0})->median, 2.5);
  EXPECT_FALSE(Summarize({}));
  EXPECT_FALSE(Summarize({7.0})->varies());
}

}  // namespace
}  // namespace bm::report
