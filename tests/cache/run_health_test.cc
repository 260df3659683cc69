#include "cache/run_health.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/nginx_server.h"

namespace bm::cache {
namespace {

class RunHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = bm::testing::MakeTempDir("bm-health");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
  }
  void TearDown() override { bm::testing::RemoveTree(dir_); }
  std::string dir_;
};

TEST_F(RunHealthTest, DeadForEveryProcessOfTheRunAndReportedOnce) {
  RunHealth step1(dir_ + "/remote-dead", "run-1");
  RunHealth step2(dir_ + "/remote-dead", "run-1");  // another step process, same build
  EXPECT_FALSE(step2.IsDead("http://r"));
  EXPECT_TRUE(step1.MarkDead("http://r", "cannot connect"));
  EXPECT_TRUE(step2.IsDead("http://r"));
  EXPECT_EQ(step2.Reason("http://r"), "cannot connect");
  EXPECT_FALSE(step2.MarkDead("http://r", "timed out"));  // already reported
  EXPECT_FALSE(step2.IsDead("http://other"));
}

TEST_F(RunHealthTest, TheNextRunTriesAgain) {
  RunHealth run1(dir_ + "/remote-dead", "run-1");
  ASSERT_TRUE(run1.MarkDead("http://r", "down"));
  RunHealth run2(dir_ + "/remote-dead", "run-2");
  EXPECT_FALSE(run2.IsDead("http://r"));
  EXPECT_TRUE(run2.MarkDead("http://r", "down again"));
  std::ifstream in(dir_ + "/remote-dead");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text.find("run-1"), std::string::npos) << "old runs' lines are dropped";
}

TEST_F(RunHealthTest, WithoutARunIdTheProcessIsTheRun) {
  RunHealth a(dir_ + "/remote-dead", "");
  EXPECT_TRUE(a.MarkDead("http://r", "down"));
  EXPECT_TRUE(a.IsDead("http://r"));
  EXPECT_FALSE(a.MarkDead("http://r", "down"));
  RunHealth b(dir_ + "/remote-dead", "");
  EXPECT_FALSE(b.IsDead("http://r"));
  EXPECT_NE(RunHealth::NewRunId(), RunHealth::NewRunId());
}

}  // namespace
}  // namespace bm::cache
