#include "cache/usage_stats.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "tests/support/nginx_server.h"

namespace bm::cache {
namespace {

class UsageStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = bm::testing::MakeTempDir("bm-usage");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
  }
  void TearDown() override { bm::testing::RemoveTree(dir_); }
  std::string dir_;
};

TEST_F(UsageStatsTest, AppendsFromManyProcessesSumAndCompact) {
  auto none = LoadUsage(dir_);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->IsZero());
  std::vector<pid_t> kids;
  for (int k = 0; k < 4; ++k) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < 50; ++i) {
        UsageStats s;
        s.remote_hits = 1;
        s.remote_bytes_down = 1000;
        if (!AppendUsage(dir_, s).ok()) _exit(1);
        if (i == 25 && k == 0 && !CompactUsage(dir_).ok()) _exit(1);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  auto total = LoadUsage(dir_);
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(total->remote_hits, 200u);
  EXPECT_EQ(total->remote_bytes_down, 200000u);
  ASSERT_TRUE(CompactUsage(dir_).ok());
  EXPECT_EQ(LoadUsage(dir_)->remote_hits, 200u);
  std::ifstream in(dir_ + "/stats.log");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

TEST_F(UsageStatsTest, MalformedLinesAreSkippedAndZeroIsNotWritten) {
  std::ofstream(dir_ + "/stats.log") << "garbage\n{\"local_hits\":2}\n";
  EXPECT_TRUE(AppendUsage(dir_, UsageStats{}).ok());
  auto total = LoadUsage(dir_);
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(total->local_hits, 2u);
  auto parsed = UsageStats::FromJson(total->ToJson());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->local_hits, 2u);
}

}  // namespace
}  // namespace bm::cache
