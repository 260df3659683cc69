#include "base/nearest_name.h"

#include <gtest/gtest.h>

namespace bm {
namespace {

TEST(NearestName, EditDistanceCountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("build", "build"), 0u);
  EXPECT_EQ(EditDistance("bild", "build"), 1u);
  EXPECT_EQ(EditDistance("pretrian", "pretrain"), 2u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
}

TEST(NearestName, SuggestsOnlyWhatIsCloseEnoughToBeATypo) {
  std::vector<std::string> names = {"build", "status", "clean"};
  EXPECT_EQ(NearestName("bild", names), "build");
  EXPECT_EQ(NearestName("statsu", names), "status");
  EXPECT_EQ(NearestName("frobnicate", names), "");
  EXPECT_EQ(DidYouMean("claen", names), " (did you mean 'clean'?)");
  EXPECT_EQ(DidYouMean("zzz", names), "");
  EXPECT_EQ(DidYouMean("x", {}), "");
}

}  // namespace
}  // namespace bm
