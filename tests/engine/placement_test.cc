// Where steps run (engine/placement.h, engine/slurm.h, engine/executor.h),
// without a cluster: which steps the Slurm executor takes, the srun commands
// it builds, how it reads Slurm's verdict, its retries, and the platform
// probed on a node — on an in-memory filesystem with a fake runner that
// answers for srun and squeue. tests/engine/cluster_e2e_test.cc runs the same
// against a real Slurm.
#include "engine/placement.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "engine/build.h"
#include "engine/platform.h"
#include "engine/slurm.h"
#include "rules/registry.h"
#include "tests/support/fake_command_runner.h"
#include "tests/support/memory_filesystem.h"

namespace bm::engine {
namespace {

using nlohmann::json;
using testing::FakeCommandRunner;
using testing::MemoryFilesystem;

TEST(PlacementTest, TheSlurmExecutorTakesTheStepsItsSettingsName) {
  Placement ws;
  ws.executor = "slurm";
  ws.launcher = "mpirun";
  ws.slurm.srun_args = {"--qos=hi"};
  const json none = json::object();
  // steps = "gpu": only what needs GPUs; the launcher of several ranks is srun.
  Placement p = PlaceTarget(ws, true, /*gpus=*/0, /*ranks=*/1, none);
  EXPECT_EQ(p.executor, "local");
  EXPECT_EQ(p.launcher, "local");
  p = PlaceTarget(ws, true, 4, 1, none);
  EXPECT_EQ(p.executor, "slurm");
  p = PlaceTarget(ws, true, 4, 4, none);
  EXPECT_EQ(p.launcher, "slurm");
  EXPECT_FALSE(UsesLocalGpus(p));
  // steps = "all": every placeable step; never one that works inside benchmake.
  ws.slurm.steps = "all";
  EXPECT_EQ(PlaceTarget(ws, true, 0, 1, none).executor, "slurm");
  EXPECT_EQ(PlaceTarget(ws, false, 0, 1, none).executor, "local");
  // A target's own word wins; its slurm table replaces, and adds srun flags.
  p = PlaceTarget(ws, true, 0, 2,
                  {{"executor", "local"}, {"slurm", {{"time", "30"}, {"srun_args", {"-x"}}}}});
  EXPECT_EQ(p.executor, "local");
  EXPECT_EQ(p.launcher, "mpirun") << "several ranks here: the workspace's launcher";
  EXPECT_EQ(p.slurm.time, "30");
  EXPECT_EQ(p.slurm.srun_args, (std::vector<std::string>{"--qos=hi", "-x"}));
  EXPECT_FALSE(UsesLocalGpus(p));
  ws.executor = "local";
  ws.launcher = "local";
  EXPECT_EQ(PlaceTarget(ws, true, 0, 1, {{"executor", "slurm"}}).executor, "slurm");
  EXPECT_TRUE(UsesLocalGpus(PlaceTarget(ws, true, 2, 2, none)));
}

TEST(PlacementTest, RoundTripsThroughTheParamsFile) {
  Placement p;
  p.executor = "slurm";
  p.launcher = "slurm";
  p.slurm = {"gpu", "proj", "1-0", 4, {"--exclusive"}, "all", 3};
  p.mpirun = {"/ws/hosts", {"--mca", "x", "y"}};
  Result<Placement> back = PlacementFromJson(PlacementToJson(p));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(PlacementToJson(*back), PlacementToJson(p));
}

TEST(SlurmTest, ACommandOfOneTaskAndAStepOfTheAllocationBenchmakeRunsIn) {
  SlurmOptions o;
  o.account = "proj";
  Command inner;
  inner.argv = {"sh", "-c", "train"};
  inner.env = {{"A", "1"}};
  inner.log_path = "/log";
  inner.timeout_seconds = 9;
  ::unsetenv("SLURM_JOB_ID");
  SrunShape shape;
  shape.gpus_per_task = 2;
  Command c = SrunCommand(o, "bm.t.1", shape, inner);
  EXPECT_EQ(c.argv, (std::vector<std::string>{"srun", "--job-name=bm.t.1", "--nodes=1",
                                              "--ntasks=1", "--gpus-per-task=2", "--account=proj",
                                              "--export=ALL", "--input=none", "--quit-on-interrupt",
                                              "--kill-on-bad-exit=1", "sh", "-c", "train"}));
  EXPECT_EQ(c.env, inner.env);
  EXPECT_EQ(c.log_path, "/log");
  EXPECT_EQ(c.timeout_seconds, 9);
  EXPECT_EQ(c.on_interrupt, (std::vector<std::string>{"scancel", "--name=bm.t.1"}));
  // Inside someone's allocation srun makes a step of it: never scancel by name.
  ::setenv("SLURM_JOB_ID", "77", 1);
  EXPECT_TRUE(InSlurmAllocation());
  EXPECT_TRUE(SrunCommand(o, "bm.t.1", shape, inner).on_interrupt.empty());
  ::unsetenv("SLURM_JOB_ID");
  EXPECT_EQ(NewSlurmJobName("train").rfind("bm.train.", 0), 0u);
  EXPECT_EQ(NewSlurmJobName("train").size(), 17u);
}

// What srun and slurmstepd print, as Slurm 22.05 prints it.
TEST(SlurmTest, ReadsSlurmsVerdictFromSrunsOutput) {
  struct Case {
    const char* log;
    const char* describe;
    bool by_slurm, retryable;
  } cases[] = {
      {"slurmstepd-n1: error: *** STEP 14.0 ON n1 CANCELLED AT 2026-11-25T10:42:46 DUE TO TIME "
       "LIMIT ***\nsrun: error: n1: task 0: Terminated\n",
       "Slurm step 14.0 ended TIMEOUT (TIME LIMIT)", true, false},
      {"slurmstepd-n1: error: *** JOB 8 ON n1 CANCELLED AT 2026-11-25T10:40:19 ***\n",
       "Slurm job 8 ended CANCELLED", true, false},
      {"slurmstepd-n1: error: *** STEP 1.0 ON n1 CANCELLED AT 2026-11-25T10:30:19 DUE TO "
       "PREEMPTION ***\n",
       "Slurm step 1.0 ended PREEMPTED (PREEMPTION)", true, true},
      {"srun: error: Node failure on n7\n", "Slurm job ended NODE_FAIL (node n7)", true, true},
      {"srun: error: Unable to allocate resources: Invalid partition name specified\n",
       "Slurm refused the job: Invalid partition name specified", true, false},
      {"srun: job 10 queued and waiting for resources\nsrun: Job allocation 10 has been "
       "revoked\n",
       "Slurm job 10 ended CANCELLED (revoked before it started)", true, false},
      {"srun: error: n1: task 0: Out Of Memory\n", "Slurm job ended OUT_OF_MEMORY", true, false},
      {"srun: error: n1: task 1: Exited with exit code 3\n", "", false, false},
  };
  for (const Case& c : cases) {
    SlurmEnd end = ParseSrunOutput(c.log);
    EXPECT_EQ(end.Describe(), c.describe) << c.log;
    EXPECT_EQ(end.ended_by_slurm(), c.by_slurm) << c.log;
    EXPECT_EQ(end.retryable(), c.retryable) << c.log;
  }
}

// The executor, the generator and the step, with a fake runner answering for
// srun (it runs the command after srun's flags), squeue and the probe.
class SlurmScenarioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("BENCHMAKE_CACHE_DIR", "/cache", 1);
    ::unsetenv("BENCHMAKE_PLATFORM");
    ::unsetenv("BENCHMAKE_EXECUTOR");
    ::unsetenv("SLURM_JOB_ID");
    ::unsetenv("CUDA_VISIBLE_DEVICES");
    rules::RegisterBuiltinRules(rules_);
    ws_.fs = &fs_;
    ws_.runner = &runner_;
    ws_.rules = &rules_;
    ws_.root = "/ws";
    ws_.benchfile = "/ws/BENCHFILE.toml";
    ws_.tools_dir = "/tools";
    ws_.self_exe = "/tools/benchmake";
    fs_.Write("/tools/benchmake-train", "");
    runner_.SetHandler([this](const Command& c) { return Answer(c); });
  }

  Result<CommandResult> Answer(const Command& c) {
    CommandResult ok;
    if (c.argv[0] == "squeue") {
      fs_.Write(c.log_path, squeue_);
      return ok;
    }
    if (c.argv[0] == "sh" && c.argv[2] == "exec \"$@\" > \"$0\"") {  // the platform probe
      const bool node = c.argv[4] == "srun";
      probes_.push_back(c.argv);
      fs_.Write(c.argv[3], json{{"where", node ? "node" : "here"}}.dump());
      return ok;
    }
    if (c.argv[0] != "srun") return runner_default_(c);
    srun_.push_back(c);
    if (!srun_fails_.empty()) {
      std::string output = srun_fails_.front();
      srun_fails_.erase(srun_fails_.begin());
      fs_.Write(c.log_path, fs_.Read(c.log_path) + output);
      CommandResult failed;
      failed.exit_code = 143;
      return failed;
    }
    size_t i = 1;
    while (i < c.argv.size() && c.argv[i].rfind("--", 0) == 0) ++i;
    Command inner = c;
    inner.argv.assign(c.argv.begin() + static_cast<long>(i), c.argv.end());
    return runner_default_(inner);
  }

  Result<InProcessSummary> Build() {
    StepOptions options;
    options.console = &console_;
    return BuildInProcess(ws_, options);
  }

  MemoryFilesystem fs_;
  FakeCommandRunner runner_{&fs_};
  FakeCommandRunner default_runner_{&fs_};  // the fake's own command language
  std::function<Result<CommandResult>(const Command&)> runner_default_ = [this](const Command& c) {
    return default_runner_.Run(c);
  };
  RuleRegistry rules_;
  Workspace ws_;
  std::ostringstream console_;
  std::vector<Command> srun_;
  std::vector<std::string> srun_fails_;  // the output of each srun to fail, in turn
  std::vector<std::vector<std::string>> probes_;
  std::string squeue_;
};

constexpr char kGpuStep[] = R"(
[benchmake]
executor = "slurm"
gpus = 0

[benchmake.slurm]
partition = "gpu"

[target.small]
rule = "exec"
command = ["write", "{out}/small.txt", "here"]
outputs = ["small.txt"]

[target.big]
rule = "exec"
command = ["write", "{out}/big.txt", "there"]
outputs = ["big.txt"]
gpus = 4
)";

// A step needing more GPUs than this machine has runs: Slurm gives them. The
// GPU-less step stays here (steps = "gpu").
TEST_F(SlurmScenarioTest, AGpuStepRunsThroughSrunAskingForItsGpus) {
  fs_.Write(ws_.benchfile, kGpuStep);
  Result<InProcessSummary> r = Build();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(fs_.Read("/ws/out/big/big.txt"), "there");
  EXPECT_EQ(fs_.Read("/ws/out/small/small.txt"), "here");
  ASSERT_EQ(srun_.size(), 1u);
  const std::vector<std::string>& argv = srun_[0].argv;
  EXPECT_EQ(argv[1].rfind("--job-name=bm.big.", 0), 0u);
  EXPECT_EQ(std::vector<std::string>(argv.begin() + 2, argv.begin() + 6),
            (std::vector<std::string>{"--nodes=1", "--ntasks=1", "--gpus-per-task=4",
                                      "--partition=gpu"}));
  EXPECT_EQ(std::getenv("CUDA_VISIBLE_DEVICES"), nullptr) << "no GPU leased here";
  EXPECT_EQ(fs_.Read("/ws/.benchmake/build.ninja").find("pool = gpu"), std::string::npos)
      << "Slurm's GPUs are not this machine's pool";
  EXPECT_NE(fs_.Read("/ws/.benchmake/log/big.log").find("$ srun --job-name=bm.big."),
            std::string::npos);
}

// Slurm's verdict (squeue's record of the job) fails the step, naming it.
TEST_F(SlurmScenarioTest, AJobSlurmEndedFailsTheStepWithSlurmsVerdict) {
  fs_.Write(ws_.benchfile, kGpuStep);
  srun_fails_ = {"srun: error: n1: task 0: Terminated\n"};
  squeue_ = "8|TIMEOUT|TimeLimit\n";
  Result<InProcessSummary> r = Build();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "big failed: Slurm job 8 ended TIMEOUT (TimeLimit): command exited with status 143");
  ASSERT_EQ(runner_.commands().back().argv[0], "squeue");
  EXPECT_EQ(runner_.commands().back().argv[3].rfind("--name=bm.big.", 0), 0u);
  EXPECT_FALSE(fs_.Exists("/ws/out/big"));
}

// A preempted job runs again (retries = 2 by default), with the same resume
// dir: the trainer continues from its last checkpoint.
TEST_F(SlurmScenarioTest, APreemptedJobRunsAgain) {
  fs_.Write(ws_.benchfile, kGpuStep);
  srun_fails_ = {"*** STEP 3.0 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO PREEMPTION ***\n"};
  squeue_ = "3|PREEMPTED|None\n";
  Result<InProcessSummary> r = Build();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(srun_.size(), 2u);
  EXPECT_NE(srun_[0].argv[1], srun_[1].argv[1]) << "each run a job of its own name";
  EXPECT_NE(console_.str().find("big: Slurm job 3 ended PREEMPTED; running it again (2 of 3), "
                                "from its last checkpoint"),
            std::string::npos)
      << console_.str();
  const std::string log = fs_.Read("/ws/.benchmake/log/big.log");
  EXPECT_NE(log.find("DUE TO PREEMPTION ***\n$ srun"), std::string::npos) << log;
  EXPECT_NE(log.find("\n---- benchmake: Slurm job 3 ended PREEMPTED; running it again (2 of 3) "
                     "----\n$ srun"),
            std::string::npos)
      << log;
  // Preempted every time: it gives up after its retries, naming the verdict.
  std::string text = kGpuStep;
  text.replace(text.find("there"), 5, "again");
  fs_.Write(ws_.benchfile, text);
  srun_.clear();
  srun_fails_.assign(3,
                     "*** STEP 3.0 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO PREEMPTION ***\n");
  r = Build();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(srun_.size(), 3u);
  EXPECT_NE(r.status().message().find("big failed: Slurm job 3 ended PREEMPTED"), std::string::npos)
      << r.status().message();
}

// A platform-dependent step under Slurm is keyed by a node's facts, probed
// there through srun (one probe per site); a local one by this machine's.
TEST_F(SlurmScenarioTest, TheNodesPlatformKeysTheStepsThatRunThere) {
  fs_.Write(ws_.benchfile, R"(
[benchmake]
executor = "slurm"
[benchmake.slurm]
steps = "all"
partition = "h100"

[target.there]
rule = "measure"
command = ["write", "{out}/m.json", "{}"]
outputs = ["m.json"]
gpus = 1

[target.also_there]
rule = "measure"
command = ["write", "{out}/m.json", "{}"]
outputs = ["m.json"]
gpus = 1

[target.here]
rule = "measure"
executor = "local"
command = ["write", "{out}/m.json", "{}"]
outputs = ["m.json"]
)");
  Result<InProcessSummary> r = Build();
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(probes_.size(), 2u) << "here, and once for the h100 node";
  std::string node_probe;
  for (const std::vector<std::string>& p : probes_)
    if (p[4] == "srun")
      for (size_t i = 4; i < p.size(); ++i) node_probe += p[i] + " ";
  EXPECT_NE(node_probe.find("--nodes=1 --ntasks=1 --gpus-per-task=1 --partition=h100 --time=5 "),
            std::string::npos)
      << node_probe;
  EXPECT_NE(node_probe.find("/tools/benchmake-train --probe"), std::string::npos);
  EXPECT_NE(fs_.Read("/ws/.benchmake/t/there.spec").find("node"), std::string::npos);
  EXPECT_NE(fs_.Read("/ws/.benchmake/t/here.spec").find("here"), std::string::npos);
}

}  // namespace
}  // namespace bm::engine
