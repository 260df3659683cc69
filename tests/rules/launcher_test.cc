// Ranks as processes: the local launcher and RunTrainer with a layout of
// several ranks, on real processes — tests/rules/testdata/fake_benchmake_train.sh
// stands in for benchmake-train (it records the rank variables it got and
// succeeds, fails, hangs or is killed as $FAKE_TRAINER_<RANK> says).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/real_filesystem.h"
#include "base/subprocess_runner.h"
#include "rules/launch/local_launcher.h"
#include "rules/train_common.h"
#include "rules/train_rules.h"

namespace bm::rules {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "/bm-launch-XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    for (const char* d : {"tools", "work", "out", "resume"}) fs::create_directories(root_ / d);
    fs::copy_file(
        fs::path(BENCHMAKE_TEST_SOURCE_DIR) / "tests/rules/testdata/fake_benchmake_train.sh",
        root_ / "tools/benchmake-train");
  }
  void TearDown() override {
    for (int rank = 0; rank < 4; ++rank)
      ::unsetenv(("FAKE_TRAINER_" + std::to_string(rank)).c_str());
    ::unsetenv("FAKE_TRAINER_ENV_DIR");
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // A pretrain step of `layout` on `device`, as the engine hands it to the rule.
  engine::StepContext Context(const std::string& layout, const std::string& device = "cpu") {
    auto rule = MakePretrainRule();
    json params = {{"data", "tok"}, {"layout", layout}, {"device", device}};
    for (const engine::ParamSpec& s : rule->params())
      if (!params.contains(s.name) && s.default_value) params[s.name] = *s.default_value;
    engine::StepContext ctx;
    ctx.target = "p";
    ctx.params = params;
    ctx.inputs = {{"tok", (root_ / "tok").string()}};
    ctx.scratch_dir = (root_ / "work").string();
    ctx.out_dir = (root_ / "out").string();
    ctx.resume_dir = (root_ / "resume").string();
    ctx.tools_dir = (root_ / "tools").string();
    ctx.log_path = (root_ / "step.log").string();
    ctx.runner = &runner_;
    ctx.fs = &fs_;
    ctx.log = &rule_log_;
    return ctx;
  }

  // The rank variables rank `rank` reported, one VAR=value per line.
  std::string RankEnv(const fs::path& dir, int rank) {
    return ReadText(dir / ("rank-" + std::to_string(rank) + ".env"));
  }

  fs::path root_;
  RealFilesystem fs_;
  SubprocessRunner runner_;
  std::ostringstream rule_log_;
};

TEST_F(LauncherTest, EachRankGetsItsRankWorldRendezvousAndDevice) {
  fs::create_directories(root_ / "work/rendezvous");
  std::ofstream(root_ / "run.json") << json({{"out_dir", (root_ / "out").string()}}).dump(2);
  launch::LocalLauncher launcher(runner_);
  launch::LaunchSpec spec;
  spec.argv = {(root_ / "tools/benchmake-train").string(), "--config",
               (root_ / "run.json").string()};
  spec.env = {{"OMP_WAIT_POLICY", "passive"}};
  spec.world_size = 4;
  spec.rendezvous = (root_ / "work/rendezvous").string();
  spec.collective_timeout_s = 42;
  spec.log_path = (root_ / "step.log").string();
  spec.gpus = {3, 1, 7, 5};
  Result<launch::LaunchResult> r = launcher.Launch(spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->success());
  ASSERT_EQ(r->ranks.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string k = std::to_string(rank);
    EXPECT_EQ(RankEnv(root_ / "work/rendezvous", rank),
              "BENCHMAKE_COLLECTIVE_TIMEOUT=42\nBENCHMAKE_RENDEZVOUS=" + spec.rendezvous +
                  "\nCUDA_VISIBLE_DEVICES=3,1,7,5\nLOCAL_RANK=" + k +
                  "\nLOCAL_WORLD_SIZE=4\nOMP_WAIT_POLICY=passive\nRANK=" + k + "\nWORLD_SIZE=4\n");
    EXPECT_EQ(r->ranks[rank].log_path, launch::RankLogPath(spec, rank));
    EXPECT_NE(ReadText(r->ranks[rank].log_path).find("rank " + k + " of 4 starting"),
              std::string::npos);
  }
  EXPECT_EQ(r->ranks[0].log_path, spec.log_path) << "rank 0 writes the step log";
  EXPECT_EQ(r->ranks[2].log_path, (root_ / "step.rank-2.log").string());
}

TEST_F(LauncherTest, RefusesGpusThatDoNotMatchTheRanksAndUnknownLaunchers) {
  launch::LocalLauncher launcher(runner_);
  launch::LaunchSpec spec;
  spec.argv = {"true"};
  spec.world_size = 4;
  spec.gpus = {0, 1};
  Result<launch::LaunchResult> r = launcher.Launch(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("need 4 GPUs, one each, but the step holds 2"),
            std::string::npos)
      << r.status().message();
  Result<std::unique_ptr<launch::Launcher>> slurm = launch::MakeLauncher("slurm", runner_);
  ASSERT_FALSE(slurm.ok());
  EXPECT_NE(slurm.status().message().find("known: local"), std::string::npos);
}

TEST_F(LauncherTest, AllRanksSucceedMetricsComeFromRankZero) {
  engine::StepContext ctx = Context("TP1PP1DP4");
  Result<engine::StepResult> r = RunTrainer(TrainKind::kPretrain, ctx);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics["written_by_rank"], 0);
  // threads stays as written: each rank shares its machine's cores by LOCAL_WORLD_SIZE
  EXPECT_EQ(json::parse(ReadText(root_ / "work/run.json"))["threads"], 0);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_NE(RankEnv(root_ / "work/rendezvous", rank).find("RANK=" + std::to_string(rank)),
              std::string::npos);
  EXPECT_NE(ReadText(root_ / "step.log").find("rank 0 done"), std::string::npos);
  EXPECT_NE(ReadText(root_ / "step.rank-3.log").find("rank 3 done"), std::string::npos);
  EXPECT_NE(rule_log_.str().find("4 ranks (local launcher"), std::string::npos) << rule_log_.str();
}

TEST_F(LauncherTest, OneProcessForAWorldOfOneWithNoRankVariables) {
  ::setenv("FAKE_TRAINER_ENV_DIR", root_.c_str(), 1);
  engine::StepContext ctx = Context("TP1PP1DP1");
  Result<engine::StepResult> r = RunTrainer(TrainKind::kPretrain, ctx);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(RankEnv(root_, 0), "OMP_WAIT_POLICY=passive\n");
  EXPECT_EQ(json::parse(ReadText(root_ / "work/run.json"))["threads"], 0);
  EXPECT_FALSE(fs::exists(root_ / "work/rendezvous"));
}

TEST_F(LauncherTest, AFailingRankFailsTheStepNamingItWithItsLogTail) {
  ::setenv("FAKE_TRAINER_1", "fail", 1);
  for (const char* hang : {"FAKE_TRAINER_0", "FAKE_TRAINER_2", "FAKE_TRAINER_3"})
    ::setenv(hang, "hang", 1);
  engine::StepContext ctx = Context("TP1PP1DP4");
  auto start = std::chrono::steady_clock::now();
  Result<engine::StepResult> r = RunTrainer(TrainKind::kPretrain, ctx);
  EXPECT_LT(SecondsSince(start), 30);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kFailed);
  const std::string& m = r.status().message();
  EXPECT_EQ(m.rfind("rank 1 of 4 exited with status 1; ranks 0, 2, 3 were stopped\n", 0), 0u) << m;
  EXPECT_NE(m.find("rank 1's log (" + (root_ / "step.rank-1.log").string() + ")"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("rank 1 line 11\n"), std::string::npos) << "the last 20 lines: " << m;
  EXPECT_NE(m.find("rank 1 line 30"), std::string::npos) << m;
  EXPECT_EQ(m.find("rank 1 line 10\n"), std::string::npos) << m;
  const std::string log = rule_log_.str();
  EXPECT_NE(log.find("rank 1 exited with status 1\n"), std::string::npos) << log;
  for (int rank : {0, 2, 3})
    EXPECT_NE(log.find(fmt::format("rank {} was stopped after rank 1 failed: killed by signal 15 "
                                   "(SIGTERM)\n",
                                   rank)),
              std::string::npos)
        << log;
}

// The acceptance case: a rank SIGKILLed mid-run while the others wait for it
// forever fails the step at once, naming the rank and the signal.
TEST_F(LauncherTest, ARankKilledMidRunFailsTheStepInBoundedTime) {
  ::setenv("FAKE_TRAINER_2", "kill", 1);
  for (const char* hang : {"FAKE_TRAINER_0", "FAKE_TRAINER_1", "FAKE_TRAINER_3"})
    ::setenv(hang, "hang", 1);
  engine::StepContext ctx = Context("TP1PP1DP4");
  auto start = std::chrono::steady_clock::now();
  Result<engine::StepResult> r = RunTrainer(TrainKind::kPretrain, ctx);
  double seconds = SecondsSince(start);
  EXPECT_LT(seconds, 30);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rank 2 of 4 was killed by signal 9 (SIGKILL)"),
            std::string::npos)
      << r.status().message();
  EXPECT_FALSE(fs::exists(root_ / "out/metrics.json"));
  std::printf("a rank killed after 0.3 s failed the step after %.2f s\n", seconds);
}

}  // namespace
}  // namespace bm::rules
