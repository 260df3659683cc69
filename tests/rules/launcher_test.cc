// Ranks as processes: the local launcher and RunTrainer with a layout of
// several ranks, on real processes — tests/rules/testdata/fake_benchmake_train.sh
// stands in for benchmake-train (it records the rank variables it got and
// succeeds, fails, hangs or is killed as $FAKE_TRAINER_<RANK> says).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
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
#include "rules/launch/mpirun_launcher.h"
#include "rules/launch/slurm_launcher.h"
#include "rules/train_common.h"
#include "rules/train_rules.h"
#include "tests/support/fake_command_runner.h"
#include "tests/support/memory_filesystem.h"
#include "tests/support/rule_params.h"
#include "tests/support/test_data.h"

namespace bm::rules {
namespace {

namespace fs = std::filesystem;
using bm::testing::ReadText;
using nlohmann::json;

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
    json params =
        testing::WithDefaults(*rule, {{"data", "tok"}, {"layout", layout}, {"device", device}});
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
  engine::Placement placement;
  placement.launcher = "pbs";
  Result<std::unique_ptr<launch::Launcher>> pbs = launch::MakeLauncher(placement, runner_, fs_);
  ASSERT_FALSE(pbs.ok());
  EXPECT_NE(pbs.status().message().find("unknown launcher 'pbs' (known: local, mpirun, slurm)"),
            std::string::npos)
      << pbs.status().message();
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

// A world of one is told so, whatever a Slurm allocation or a torchrun job
// around benchmake says (torchrun --nproc-per-node=2 gives its second
// process LOCAL_RANK=1, LOCAL_WORLD_SIZE=2; a world of one is local rank 0 of 1).
TEST_F(LauncherTest, OneProcessForAWorldOfOne) {
  ::setenv("FAKE_TRAINER_ENV_DIR", root_.c_str(), 1);
  ::setenv("SLURM_PROCID", "0", 1);
  ::setenv("SLURM_NTASKS", "8", 1);
  ::setenv("LOCAL_RANK", "1", 1);
  ::setenv("LOCAL_WORLD_SIZE", "2", 1);
  engine::StepContext ctx = Context("TP1PP1DP1");
  Result<engine::StepResult> r = RunTrainer(TrainKind::kPretrain, ctx);
  for (const char* v : {"SLURM_PROCID", "SLURM_NTASKS", "LOCAL_RANK", "LOCAL_WORLD_SIZE"})
    ::unsetenv(v);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(RankEnv(root_, 0),
            "LOCAL_RANK=0\nLOCAL_WORLD_SIZE=1\nOMP_WAIT_POLICY=passive\nRANK=0\nWORLD_SIZE=1\n");
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

// A rank killed from outside while its peer loses it at once (as Gloo's
// "Connection reset by peer" ends the real trainer's other ranks within
// milliseconds): the killed rank failed first, whatever order the two are
// reaped in, and it was not "stopped" by the launcher, which sends SIGTERM
// first (TRAINER.md). Rank 1 holds a FIFO that rank 0 reads; rank 0 exits 1
// on its end of file, as a rank does on its lost peer. Three runs: the two
// ends fall within one poll of the runner most of the time.
TEST_F(LauncherTest, ARankKilledFromOutsideIsNamedNotThePeerThatLostIt) {
  const fs::path fifo = root_ / "peer";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  launch::LocalLauncher launcher(runner_);
  launch::LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "if [ \"$RANK\" = 1 ]; then exec 3>\"$0\"; sleep 0.1; kill -9 $$; fi; "
               "cat \"$0\" > /dev/null; echo lost my peer; exit 1",
               fifo.string()};
  spec.world_size = 2;
  spec.rendezvous = (root_ / "work").string();
  spec.log_path = (root_ / "step.log").string();
  for (int run = 0; run < 3; ++run) {
    Result<launch::LaunchResult> r = launcher.Launch(spec);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->first_failure, 1)
        << "run " << run << ": " << launch::DescribeRankEnd(r->ranks[0], r->first_failure);
    EXPECT_EQ(r->ranks[1].result.term_signal, SIGKILL);
    EXPECT_FALSE(r->ranks[1].result.stopped);
    const std::string m = launch::DescribeFailure(*r, fs_);
    EXPECT_EQ(m.rfind("rank 1 of 2 was killed by signal 9 (SIGKILL)", 0), 0u) << m;
    // Rank 0 exited by itself, or was stopped the launcher's way.
    const CommandResult& peer = r->ranks[0].result;
    EXPECT_TRUE(peer.stopped ? peer.term_signal == SIGTERM || peer.exit_code == 1
                             : peer.exit_code == 1)
        << launch::DescribeRankEnd(r->ranks[0], r->first_failure);
  }
}

// A rank that fails by itself (exit status 3, no signal) while its peer loses
// it at once and says so, exiting with the trainer's "peer lost" status 75
// (trainer/dist/exit_status.h): the rank that failed is named, whichever of
// the two ends the runner saw first. Both ends fall within one poll most of
// the time, where the runner lists rank 0 first; ten runs.
TEST_F(LauncherTest, ARankFailingByItselfIsNamedNotThePeerThatLostIt) {
  const fs::path fifo = root_ / "peer";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  launch::LocalLauncher launcher(runner_);
  launch::LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "if [ \"$RANK\" = 1 ]; then exec 3>\"$0\"; sleep 0.1; exit 3; fi; "
               "cat \"$0\" > /dev/null; echo lost my peer; exit 75",
               fifo.string()};
  spec.world_size = 2;
  spec.rendezvous = (root_ / "work").string();
  spec.log_path = (root_ / "step.log").string();
  for (int run = 0; run < 10; ++run) {
    Result<launch::LaunchResult> r = launcher.Launch(spec);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->first_failure, 1) << "run " << run << ": " << launch::DescribeFailure(*r, fs_);
    EXPECT_EQ(r->ranks[1].result.exit_code, 3);
    const std::string m = launch::DescribeFailure(*r, fs_);
    EXPECT_EQ(m.rfind("rank 1 of 2 exited with status 3", 0), 0u) << m;
    // Rank 0 lost its peer by itself, or was stopped the launcher's way.
    const CommandResult& peer = r->ranks[0].result;
    if (!peer.stopped) {
      EXPECT_EQ(peer.exit_code, 75);
      EXPECT_NE(m.find("; rank 0 lost a peer (exit status 75)\n"), std::string::npos) << m;
      EXPECT_EQ(launch::DescribeRankEnd(r->ranks[0], 1),
                "lost a peer after rank 1 failed (exited with status 75)");
    }
  }
}

// ---- The launchers whose ranks are the tasks of one command (srun, mpirun):
// the command they build and how they read its failure, on a fake runner.

class OneCommandLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("SLURM_JOB_ID");  // a job of our own: cancelled by name on Ctrl-C
    fs_.Write("/ws/.benchmake/log/p.log", "");
    spec_.argv = {"/tools/benchmake-train", "--config", "/ws/work/run.json"};
    spec_.cwd = "/ws/work";
    spec_.env = {{"OMP_WAIT_POLICY", "passive"}};
    spec_.world_size = 2;
    spec_.rendezvous = "/ws/work/rendezvous";
    spec_.collective_timeout_s = 60;
    spec_.log_path = "/ws/.benchmake/log/p.log";
  }
  // The runner answers with `output` (appended to the command's log) and `exit_code`.
  void Answer(const std::string& output, int exit_code) {
    runner_.SetHandler([this, output, exit_code](const Command& c) -> Result<CommandResult> {
      fs_.Write(c.log_path, fs_.Read(c.log_path) + output);
      CommandResult r;
      r.exit_code = exit_code;
      return r;
    });
  }

  bm::testing::MemoryFilesystem fs_;
  bm::testing::FakeCommandRunner runner_{&fs_};
  launch::LaunchSpec spec_;
};

const char kWrapper[] = "if [ \"$r\" != 0 ]; then exec >\"$0.rank-$r.log\" 2>&1; fi; exec \"$@\"";

TEST_F(OneCommandLauncherTest, SlurmRanksAreTheTasksOfOneSrun) {
  engine::SlurmOptions options;
  options.partition = "debug";
  options.time = "5";
  options.srun_args = {"--qos=hi"};
  spec_.cpus_per_rank = 1;
  Answer("", 0);
  launch::SlurmLauncher launcher(runner_, fs_, options, "bm.p.1234abcd");
  Result<launch::LaunchResult> r = launcher.Launch(spec_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->success());
  ASSERT_EQ(runner_.commands().size(), 1u);
  const Command c = runner_.commands()[0];
  EXPECT_EQ(c.argv, (std::vector<std::string>{"srun",
                                              "--job-name=bm.p.1234abcd",
                                              "--nodes=1",
                                              "--ntasks=2",
                                              "--ntasks-per-node=2",
                                              "--cpus-per-task=1",
                                              "--partition=debug",
                                              "--time=5",
                                              "--export=ALL",
                                              "--input=none",
                                              "--quit-on-interrupt",
                                              "--kill-on-bad-exit=1",
                                              "--qos=hi",
                                              "/bin/sh",
                                              "-c",
                                              std::string("r=${SLURM_PROCID:-0}; ") + kWrapper,
                                              "/ws/.benchmake/log/p",
                                              "/tools/benchmake-train",
                                              "--config",
                                              "/ws/work/run.json"}));
  EXPECT_EQ(r->command, c.argv) << "what the step log shows";
  // Slurm's variables say where each task is: the launcher's own are emptied,
  // and so are mpirun's (read before Slurm's), which a benchmake started by
  // mpirun would pass on through --export=ALL.
  EXPECT_EQ(c.env, (std::map<std::string, std::string>{{"BENCHMAKE_COLLECTIVE_TIMEOUT", "60"},
                                                       {"BENCHMAKE_RENDEZVOUS", spec_.rendezvous},
                                                       {"LOCAL_RANK", ""},
                                                       {"LOCAL_WORLD_SIZE", ""},
                                                       {"OMPI_COMM_WORLD_LOCAL_RANK", ""},
                                                       {"OMPI_COMM_WORLD_LOCAL_SIZE", ""},
                                                       {"OMPI_COMM_WORLD_RANK", ""},
                                                       {"OMPI_COMM_WORLD_SIZE", ""},
                                                       {"OMP_WAIT_POLICY", "passive"},
                                                       {"RANK", ""},
                                                       {"WORLD_SIZE", ""}}));
  EXPECT_EQ(c.cwd, "/ws/work");
  EXPECT_EQ(c.log_path, spec_.log_path);
  EXPECT_EQ(c.on_interrupt, (std::vector<std::string>{"scancel", "--name=bm.p.1234abcd"}));
  EXPECT_EQ(launcher.LocalWorldSize(2), 2);
}

TEST_F(OneCommandLauncherTest, SlurmGpuRanksFillWholeNodes) {
  engine::SlurmOptions options;
  options.ranks_per_node = 4;
  spec_.world_size = 8;
  spec_.gpu = true;
  Answer("", 0);
  launch::SlurmLauncher launcher(runner_, fs_, options, "bm.p.1");
  ASSERT_TRUE(launcher.Launch(spec_).ok());
  const std::vector<std::string> argv = runner_.commands()[0].argv;
  EXPECT_EQ(std::vector<std::string>(argv.begin() + 2, argv.begin() + 7),
            (std::vector<std::string>{"--nodes=2", "--ntasks=8", "--ntasks-per-node=4",
                                      "--gpus-per-task=1", "--gpu-bind=none"}));
  EXPECT_EQ(launcher.LocalWorldSize(8), 4);
  spec_.world_size = 6;
  Result<launch::LaunchResult> r = launcher.Launch(spec_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("6 ranks do not fill whole nodes of 4 ranks"),
            std::string::npos)
      << r.status().message();
}

// srun says which task failed first and which it then killed.
TEST_F(OneCommandLauncherTest, SlurmFailureNamesTheFirstRankToFail) {
  spec_.world_size = 4;
  fs_.Write(spec_.log_path, "srun: error: n1: task 2: Exited with exit code 9\n");  // an older run
  Answer(
      "rank 1 says goodbye\nsrun: error: n1: task 1: Exited with exit code 3\n"
      "srun: error: n1: tasks 0,2-3: Killed\n",
      3);
  launch::SlurmLauncher launcher(runner_, fs_, {}, "bm.p.1");
  Result<launch::LaunchResult> r = launcher.Launch(spec_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->first_failure, 1);
  EXPECT_EQ(r->ranks[1].result.exit_code, 3);
  for (int rank : {0, 2, 3}) {
    EXPECT_TRUE(r->ranks[rank].result.stopped) << rank;
    EXPECT_EQ(r->ranks[rank].result.term_signal, SIGKILL) << rank;
  }
  EXPECT_EQ(launch::DescribeFailure(*r, fs_).substr(0, 61),
            "rank 1 of 4 exited with status 3; ranks 0, 2, 3 were stopped\n");
  EXPECT_EQ(r->ranks[1].log_path, "/ws/.benchmake/log/p.rank-1.log");
}

// srun lists the tasks' ends in the order they reached it, which is not the
// order they happened: kill -9 of rank 1 of a real two-rank pretrain under srun
// (Slurm 22.05, tests/trainer/killed_rank_test.cc) printed rank 0's end first,
// rank 0 having exited at once on losing it — in every such run. These are the
// lines such a run added to the step log, verbatim (rank 0's last line, then
// srun's). The killed rank is named; rank 0 lost it (status 75).
TEST_F(OneCommandLauncherTest, SlurmNamesTheKilledTaskNotThePeerThatLostIt) {
  Answer(
      "benchmake-train: gloo AllGather of 21568 fp32 failed in group 'dp.tp0.pp0' (rank 0 of 2; "
      "global ranks 0, 1): a peer was lost (it ended, or its machine went away): "
      "[./gloo/transport/tcp/pair.cc:589] Read error [127.0.0.1]:13747: Connection reset by peer\n"
      "srun: error: localhost: task 0: Exited with exit code 75\n"
      "srun: launch/slurm: _step_signal: Terminating StepId=5.0\n"
      "srun: error: localhost: task 1: Killed\n"
      "srun: Force Terminated StepId=5.0\n",
      137);
  launch::SlurmLauncher launcher(runner_, fs_, {}, "bm.p.1");
  Result<launch::LaunchResult> r = launcher.Launch(spec_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->first_failure, 1);
  EXPECT_EQ(r->ranks[1].result.term_signal, SIGKILL);
  EXPECT_FALSE(r->ranks[1].result.stopped);
  EXPECT_EQ(r->ranks[0].result.exit_code, 75);
  EXPECT_FALSE(r->ranks[0].result.stopped) << "it ended by itself";
  EXPECT_EQ(launch::DescribeRankEnd(r->ranks[0], 1),
            "lost a peer after rank 1 failed (exited with status 75)");
  const std::string m = launch::DescribeFailure(*r, fs_);
  EXPECT_EQ(m.rfind("rank 1 of 2 was killed by signal 9 (SIGKILL); rank 0 lost a peer (exit "
                    "status 75)\n",
                    0),
            0u)
      << m;
}

// Of four tasks, three lost a peer and are listed first, in one line; the
// fourth failed by itself (status 3) and is named. A run in which every task
// that failed only lost a peer names the first, saying that no rank was seen
// failing by itself.
TEST_F(OneCommandLauncherTest, SlurmRanksALostPeerBelowAnyOtherFailure) {
  spec_.world_size = 4;
  Answer(
      "srun: error: n1: tasks 0,2-3: Exited with exit code 75\n"
      "srun: error: n1: task 1: Exited with exit code 3\n",
      75);
  launch::SlurmLauncher launcher(runner_, fs_, {}, "bm.p.1");
  Result<launch::LaunchResult> r = launcher.Launch(spec_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->first_failure, 1);
  std::string m = launch::DescribeFailure(*r, fs_);
  EXPECT_EQ(
      m.rfind("rank 1 of 4 exited with status 3; ranks 0, 2, 3 lost a peer (exit status 75)\n", 0),
      0u)
      << m;

  Answer("srun: error: n1: tasks 2-3: Exited with exit code 75\n", 75);
  r = launcher.Launch(spec_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->first_failure, 2);
  m = launch::DescribeFailure(*r, fs_);
  EXPECT_EQ(m.rfind("rank 2 of 4 exited with status 75 (it lost a peer, and no rank was seen "
                    "failing by itself); rank 3 lost a peer (exit status 75)\n",
                    0),
            0u)
      << m;
}

// srun itself failed (no job): rank 0 carries it, and the step log says why.
TEST_F(OneCommandLauncherTest, SlurmRefusalFailsRankZero) {
  Answer("srun: error: Unable to allocate resources: Invalid partition name specified\n", 1);
  launch::SlurmLauncher launcher(runner_, fs_, {}, "bm.p.1");
  Result<launch::LaunchResult> r = launcher.Launch(spec_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first_failure, 0);
  EXPECT_EQ(r->ranks[0].result.exit_code, 1);
  EXPECT_TRUE(r->ranks[1].result.success());
}

TEST_F(OneCommandLauncherTest, MpirunRanksAreTheProcessesOfOneMpirun) {
  engine::MpirunOptions options;
  options.hostfile = "/ws/hosts";
  options.mpirun_args = {"--mca", "btl_tcp_if_include", "lo"};
  Answer("", 0);
  launch::MpirunLauncher launcher(runner_, fs_, options);
  Result<launch::LaunchResult> r = launcher.Launch(spec_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Command c = runner_.commands()[0];
  std::vector<std::string> want = {"mpirun",    "-np",       "2",   "--hostfile",
                                   "/ws/hosts", "--bind-to", "none"};
  if (::geteuid() == 0) want.push_back("--allow-run-as-root");
  for (const char* v : {"BENCHMAKE_COLLECTIVE_TIMEOUT", "BENCHMAKE_RENDEZVOUS", "LOCAL_RANK",
                        "LOCAL_WORLD_SIZE", "OMP_WAIT_POLICY", "RANK", "WORLD_SIZE"})
    want.insert(want.end(), {"-x", v});
  want.insert(want.end(),
              {"--mca", "btl_tcp_if_include", "lo", "/bin/sh", "-c",
               std::string("r=${OMPI_COMM_WORLD_RANK:-0}; ") + kWrapper, "/ws/.benchmake/log/p",
               "/tools/benchmake-train", "--config", "/ws/work/run.json"});
  EXPECT_EQ(c.argv, want);
  EXPECT_EQ(c.env.at("BENCHMAKE_RENDEZVOUS"), spec_.rendezvous);
  EXPECT_EQ(c.env.at("RANK"), "");
  EXPECT_TRUE(c.on_interrupt.empty());
}

TEST_F(OneCommandLauncherTest, MpirunFailureNamesTheRankItReports) {
  Answer(
      "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
      "the job to be terminated. The first process to do so was:\n\n"
      "  Process name: [[32359,1],1]\n  Exit code:    3\n",
      3);
  launch::MpirunLauncher launcher(runner_, fs_, {});
  Result<launch::LaunchResult> r = launcher.Launch(spec_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first_failure, 1);
  EXPECT_EQ(r->ranks[1].result.exit_code, 3);
  // mpirun's report names only the first process to fail, then it aborts the
  // job: how rank 0 ended is not known (not "succeeded").
  EXPECT_EQ(launch::DescribeRankEnd(r->ranks[0], r->first_failure),
            "ended with the job (mpirun reports only the first rank to fail)");
  EXPECT_EQ(launch::ParseMpirunReport(
                "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 "
                "(Killed).")[0]
                .second.term_signal,
            9);
}

// mpirun names only the first rank to end: when that rank only lost a peer,
// the rank that caused it is not known, and the error says so.
TEST_F(OneCommandLauncherTest, MpirunReportingARankThatLostAPeerSaysNoCauseWasSeen) {
  Answer(
      "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
      "the job to be terminated. The first process to do so was:\n\n"
      "  Process name: [[32359,1],0]\n  Exit code:    75\n",
      75);
  launch::MpirunLauncher launcher(runner_, fs_, {});
  Result<launch::LaunchResult> r = launcher.Launch(spec_);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first_failure, 0);
  const std::string m = launch::DescribeFailure(*r, fs_);
  EXPECT_EQ(m.rfind("rank 0 of 2 exited with status 75 (it lost a peer, and no rank was seen "
                    "failing by itself)\n",
                    0),
            0u)
      << m;
  EXPECT_EQ(launch::DescribeRankEnd(r->ranks[1], r->first_failure),
            "ended with the job (mpirun reports only the first rank to fail)");
}

// mpirun itself refused (OpenMPI 4.1.4's verbatim answer to -np 4 on a
// 2-core machine without --oversubscribe): no rank ran, so none is named;
// the error says mpirun failed and shows its message from its first line.
TEST_F(OneCommandLauncherTest, MpirunRefusingToStartNamesNoRank) {
  spec_.world_size = 4;
  Answer(
      "--------------------------------------------------------------------------\n"
      "There are not enough slots available in the system to satisfy the 4\n"
      "slots that were requested by the application:\n\n  /bin/sh\n\n"
      "Either request fewer slots for your application, or make more slots\n"
      "available for use.\n\n"
      "A \"slot\" is the Open MPI term for an allocatable unit where we can\n"
      "launch a process.  The number of slots available are defined by the\n"
      "environment in which Open MPI processes are run:\n\n"
      "  1. Hostfile, via \"slots=N\" clauses (N defaults to number of\n"
      "     processor cores if not provided)\n"
      "  2. The --host command line parameter, via a \":N\" suffix on the\n"
      "     hostname (N defaults to 1 if not provided)\n"
      "  3. Resource manager (e.g., SLURM, PBS/Torque, LSF, etc.)\n"
      "  4. If none of a hostfile, the --host command line parameter, or an\n"
      "     RM is present, Open MPI defaults to the number of processor cores\n\n"
      "In all the above cases, if you want Open MPI to default to the number\n"
      "of hardware threads instead of the number of processor cores, use the\n"
      "--use-hwthread-cpus option.\n\n"
      "Alternatively, you can use the --oversubscribe option to ignore the\n"
      "number of available slots when deciding the number of processes to\n"
      "launch.\n"
      "--------------------------------------------------------------------------\n",
      1);
  launch::MpirunLauncher launcher(runner_, fs_, {});
  Result<launch::LaunchResult> r = launcher.Launch(spec_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->success());
  const std::string m = launch::DescribeFailure(*r, fs_);
  EXPECT_EQ(m.rfind("mpirun exited with status 1 without naming a rank that failed", 0), 0u) << m;
  EXPECT_EQ(m.find("rank 0 of 4"), std::string::npos) << m;
  EXPECT_NE(m.find("There are not enough slots available in the system to satisfy the 4\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("--oversubscribe option"), std::string::npos) << m;
}

// The wrapper on a real shell: rank 0's output stays the command's, rank k's
// goes to its own log beside the step log.
TEST_F(LauncherTest, RankLogWrapperSendsRanksButZeroToTheirLogs) {
  launch::LaunchSpec spec;
  spec.argv = {"sh", "-c", "echo hello from $MY_RANK"};
  spec.log_path = (root_ / "step.log").string();
  for (const char* rank : {"0", "1"}) {
    Command c;
    c.argv = launch::RankLogWrapper(spec, "MY_RANK");
    c.env = {{"MY_RANK", rank}};
    c.log_path = spec.log_path;
    Result<CommandResult> r = runner_.Run(c);
    ASSERT_TRUE(r.ok() && r->success());
  }
  EXPECT_EQ(ReadText(root_ / "step.log"), "hello from 0\n");
  EXPECT_EQ(ReadText(root_ / "step.rank-1.log"), "hello from 1\n");
}

}  // namespace
}  // namespace bm::rules
