#include "base/subprocess_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace bm {
namespace {

std::string Slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SubprocessRunnerTest, ExitCodeEnvCwdAndLog) {
  std::string log = ::testing::TempDir() + "/runner_test.log";
  std::remove(log.c_str());
  SubprocessRunner runner;
  Command c;
  c.argv = {"sh", "-c", "echo out $FOO; pwd; echo err >&2; exit 3"};
  c.env["FOO"] = "bar";
  c.cwd = "/tmp";
  c.log_path = log;
  Result<CommandResult> r = runner.Run(c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->success());
  EXPECT_EQ(Slurp(log), "out bar\n/tmp\nerr\n");
}

TEST(SubprocessRunnerTest, MissingProgramIsAStatus) {
  SubprocessRunner runner;
  Command c;
  c.argv = {"benchmake-no-such-program"};
  Result<CommandResult> r = runner.Run(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
}

TEST(SubprocessRunnerTest, TimeoutKillsTheProcessGroup) {
  SubprocessRunner runner;
  Command c;
  c.argv = {"sh", "-c", "sleep 20 & sleep 20; wait"};
  c.timeout_seconds = 0.3;
  auto start = std::chrono::steady_clock::now();
  Result<CommandResult> r = runner.Run(c);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
}

TEST(SubprocessRunnerTest, TeeCopiesToLog) {
  std::string log = ::testing::TempDir() + "/runner_tee.log";
  std::remove(log.c_str());
  SubprocessRunner runner;
  Command c;
  c.argv = {"sh", "-c", "echo live"};
  c.log_path = log;
  c.echo_to_terminal = true;
  ASSERT_TRUE(runner.Run(c)->success());
  EXPECT_EQ(Slurp(log), "live\n");
}

}  // namespace
}  // namespace bm
