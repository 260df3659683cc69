#include "base/result.h"

#include <gtest/gtest.h>

namespace bm {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Errorf(ErrorCode::kInvalidArgument, "{} is odd", x);
  return x / 2;
}

Result<int> Quarter(int x) {
  BM_ASSIGN_OR_RETURN(int half, Half(x));
  return Half(half);
}

TEST(ResultTest, ValueAndErrorPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> odd = Quarter(6);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message(), "3 is odd");
  EXPECT_EQ(odd.status().ExitCode(), 2);
}

TEST(StatusTest, ContextPrefixesMessageAndKeepsOk) {
  Status s = Errorf(ErrorCode::kIo, "disk full").WithContext("writing out/a");
  EXPECT_EQ(s.message(), "writing out/a: disk full");
  EXPECT_EQ(s.ExitCode(), 1);
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

}  // namespace
}  // namespace bm
