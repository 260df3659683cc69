// benchmake beyond one machine, end to end: the real binary, real ninja and
// the real trainer against a real Slurm started on this machine
// (tests/support/slurm_cluster.h: munged, slurmctld, one CPU-only slurmd on
// loopback) and against OpenMPI's mpirun on localhost. Each test skips, saying
// why, only where Slurm (or mpirun) cannot run here.
//
// The workspaces live on this machine's filesystem, which the "node" shares,
// as a cluster's shared filesystem would be (docs/CLUSTER.md).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/support/processes.h"
#include "tests/support/slurm_cluster.h"
#include "tests/support/test_data.h"

namespace bm::engine {
namespace {

namespace fs = std::filesystem;
using bm::testing::ReadText;
using bm::testing::WriteText;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Exec steps (one reading the other), a tokenize step (which works inside
// benchmake: it stays here) and a two-rank CPU pretrain of a tiny LLaMA.
constexpr char kBenchfile[] = R"(
[benchmake]
executor = "@EXECUTOR@"
launcher = "@LAUNCHER@"

[benchmake.slurm]
steps = "all"
time = "5"

[benchmake.mpirun]
hostfile = "hosts"

[target.hello]
rule = "exec"
command = ["sh", "-c", "echo ${SLURM_JOB_ID:-none} > {out}/job; echo hello > {out}/hello.txt"]
outputs = ["job", "hello.txt"]

[target.shout]
rule = "exec"
inputs = ["hello"]
command = ["sh", "-c", "tr a-z A-Z < {in.hello}/hello.txt > {out}/shout.txt"]
outputs = ["shout.txt"]

[target.tokens]
rule = "tokenize"
input = ["corpus.txt"]
tokenizer = "bytes"
document_start = '^Chapter [0-9]+$'
valid_fraction = 0.1
seed = 1

[target.train]
rule = "pretrain"
data = "tokens"
model = "llama-tiny"
overrides = { max_seq = 32 }
layout = "DP2"
threads = 1
lbs = 2
mpe = 16
steps = @STEPS@
warmup_steps = 2
checkpoint_every = @CHECKPOINT_EVERY@
progress = false
collective_timeout = 60
)";

// One step that sleeps in Slurm until it is ended.
constexpr char kSleepy[] = R"(
[benchmake]
executor = "slurm"

[target.sleepy]
rule = "exec"
executor = "slurm"
command = ["sh", "-c", "echo sleeping; sleep 300; echo x > {out}/x"]
outputs = ["x"]
slurm = { time = "@TIME@" }
)";

class ClusterE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path dir = bm::testing::BinaryDir();
    binary_ = (dir / "benchmake").string();
    ASSERT_TRUE(fs::exists(binary_)) << binary_ << " (set BENCHMAKE_BINARY_DIR)";
    ASSERT_TRUE(fs::exists(dir / "benchmake-train")) << "the tests train with the real trainer";
    char templ[] = "/tmp/benchmake-cluster-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
    ::unsetenv("BENCHMAKE_PLATFORM");
    ::unsetenv("BENCHMAKE_EXECUTOR");
  }
  void TearDown() override {
    if (build_ > 0 && ::waitpid(build_, nullptr, WNOHANG) == 0) {  // a test that failed early
      ::kill(-build_, SIGKILL);
      ::waitpid(build_, nullptr, 0);
    }
    cluster_.reset();  // jobs cancelled, daemons stopped, before the files go
    std::error_code ec;
    for (auto& p : fs::recursive_directory_iterator(root_, ec))
      fs::permissions(p.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }

  // Starts the cluster; false (the test then skips) when Slurm cannot run here.
  bool StartSlurm() {
    Result<std::unique_ptr<testing::SlurmCluster>> c = testing::SlurmCluster::Start();
    if (!c.ok()) {
      skip_ = c.status().message();
      return false;
    }
    cluster_ = std::move(*c);
    cluster_->ExportEnv();
    return true;
  }

  // A workspace `name` with kBenchfile's pipeline, its own cache.
  fs::path Workspace(const std::string& name, const std::string& executor,
                     const std::string& launcher = "local", int steps = 24,
                     int checkpoint_every = 0) {
    fs::path ws = root_ / name;
    std::string text = kBenchfile;
    for (auto [from, to] : {std::pair<std::string, std::string>{"@EXECUTOR@", executor},
                            {"@LAUNCHER@", launcher},
                            {"@STEPS@", std::to_string(steps)},
                            {"@CHECKPOINT_EVERY@", std::to_string(checkpoint_every)}})
      text = std::regex_replace(text, std::regex(from), to);
    WriteText(ws / "BENCHFILE.toml", text);
    WriteText(ws / "hosts", "localhost slots=2\n");
    std::string corpus;
    for (int c = 1; c <= 30; ++c) {
      corpus += "Chapter " + std::to_string(c) + "\n";
      for (int l = 0; l < 4; ++l)
        corpus += "in the beginning " + std::to_string(c * 7 + l) + " the heaven and the earth\n";
    }
    WriteText(ws / "corpus.txt", corpus);
    return ws;
  }

  struct Run {
    int exit_code;
    std::string output;
  };
  Run Benchmake(const fs::path& ws, const std::string& args) {
    std::string out = (ws / "output.txt").string();
    std::string cmd = "cd '" + ws.string() + "' && BENCHMAKE_CACHE_DIR='" + ws.string() +
                      "/cache' '" + binary_ + "' " + args + " > '" + out + "' 2>&1";
    int status = std::system(cmd.c_str());
    return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadText(out)};
  }

  // `benchmake build` in its own process group, as a terminal starts it;
  // Wait() for it.
  void StartBuild(const fs::path& ws, const std::string& args = "build") {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      std::string cmd = "cd '" + ws.string() + "' && BENCHMAKE_CACHE_DIR='" + ws.string() +
                        "/cache' exec '" + binary_ + "' " + args + " > output.txt 2>&1";
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid, pid);
    build_ = pid;
  }
  // The build's wait status.
  int Wait() {
    int status = 0;
    EXPECT_EQ(::waitpid(build_, &status, 0), build_);
    build_ = -1;
    return status;
  }

  // squeue's "id|name|state|reason" lines of every job this cluster knows, oldest first.
  std::vector<std::vector<std::string>> Jobs() {
    std::vector<std::vector<std::string>> out;
    Result<std::string> text =
        cluster_->Shell("squeue --noheader --states=all --format='%i|%j|%T|%r'");
    if (!text.ok()) return out;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> fields;
      std::istringstream l(line);
      for (std::string f; std::getline(l, f, '|');) fields.push_back(f);
      if (fields.size() == 4) out.push_back(fields);
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return std::stol(a[0]) < std::stol(b[0]); });
    return out;
  }
  // The states of the jobs whose name starts with "bm.WHAT.", oldest first.
  std::vector<std::string> JobStates(const std::string& what) {
    std::vector<std::string> states;
    for (const auto& j : Jobs())
      if (j[1].rfind("bm." + what + ".", 0) == 0) states.push_back(j[2]);
    return states;
  }
  // The id of the job of `what` once it is RUNNING ("" after 30 s).
  std::string WaitRunning(const std::string& what) {
    auto start = Clock::now();
    while (SecondsSince(start) < 30) {
      for (const auto& j : Jobs())
        if (j[1].rfind("bm." + what + ".", 0) == 0 && j[2] == "RUNNING") return j[0];
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return "";
  }

  // Whether kSleepy's command has printed "sleeping" into the step's log within 30 s.
  static bool WaitStepStarted(const fs::path& ws, const std::string& what) {
    auto start = Clock::now();
    while (SecondsSince(start) < 30) {
      if (ReadText(ws / ".benchmake/log" / (what + ".log")).find("sleeping") != std::string::npos)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  static std::vector<double> Losses(const fs::path& ws) {
    std::vector<double> out;
    std::ifstream in(ws / "out/train/log.jsonl");
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line)["loss"]);
    return out;
  }
  // The two-rank run on this machine, the local launcher's: what every other
  // placement must equal, bit for bit (the same two Gloo ranks).
  std::vector<double> LocalLosses(int steps = 24) {
    fs::path ws = Workspace("local", "local", "local", steps);
    Run r = Benchmake(ws, "build train");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(ReadText(ws / ".benchmake/log/train.log").find("(local launcher"), std::string::npos);
    return Losses(ws);
  }

  // A workspace of kSleepy's one step with a time limit of `time` minutes.
  fs::path Sleepy(const std::string& time) {
    fs::path ws = root_ / "sleepy";
    WriteText(ws / "BENCHFILE.toml", std::regex_replace(kSleepy, std::regex("@TIME@"), time));
    return ws;
  }

  // SIGKILL, as the OOM killer or a crash ends them (no handler runs), to StartBuild's
  // `benchmake build` and, with `steps`, to its ninja's guardian, ninja and the `benchmake step`
  // ninja runs, but not to the step's guardian ("benchmake-guard", base/guardian.h) nor below it.
  void KillBuild(bool steps) {
    std::vector<pid_t> doomed = {build_};
    for (pid_t p : steps ? bm::testing::Descendants(build_) : std::vector<pid_t>{})
      if (bm::testing::AncestorNamed(p, "benchmake") == build_) doomed.push_back(p);
    for (pid_t p : doomed) ::kill(p, SIGKILL);
  }

  // The failed step left no output, no stamp and no action record.
  static void ExpectNothingCached(const fs::path& ws) {
    EXPECT_FALSE(fs::exists(ws / "out/sleepy"));
    EXPECT_FALSE(fs::exists(ws / ".benchmake/t/sleepy.out"));
    int records = 0;
    std::error_code ec;
    for (auto& p : fs::recursive_directory_iterator(ws / "cache/ac", ec))
      records += p.is_regular_file() ? 1 : 0;
    EXPECT_EQ(records, 0);
  }

  std::string binary_;
  fs::path root_;
  std::unique_ptr<testing::SlurmCluster> cluster_;
  std::string skip_;
  pid_t build_ = -1;  // StartBuild's
};

#define START_SLURM_OR_SKIP() \
  if (!StartSlurm()) GTEST_SKIP() << "Slurm cannot run here: " << skip_

// The acceptance case: exec steps and a two-rank CPU training step run
// through Slurm (srun -n 2), the tokenize step here; the loss curve equals the
// local two-rank run's; the platform was probed through srun; a rerun does nothing
// and starts no job.
TEST_F(ClusterE2eTest, StepsAndTwoRankTrainingRunThroughSlurmAndARerunDoesNothing) {
  START_SLURM_OR_SKIP();
  const std::vector<double> local = LocalLosses();
  fs::path ws = Workspace("slurm", "slurm");
  auto start = Clock::now();
  Run r = Benchmake(ws, "build");
  ASSERT_EQ(r.exit_code, 0) << r.output << cluster_->Logs();
  std::printf("built through Slurm in %.1f s\n", SecondsSince(start));

  // Each exec step was a Slurm job of its own; tokenize never went to Slurm.
  for (const char* step : {"hello", "shout", "train", "probe"})
    EXPECT_EQ(JobStates(step), std::vector<std::string>{"COMPLETED"}) << step;
  EXPECT_TRUE(JobStates("tokens").empty());
  EXPECT_NE(ReadText(ws / "out/hello/job"), "none\n") << "ran inside a Slurm job";
  EXPECT_EQ(ReadText(ws / "out/shout/shout.txt"), "HELLO\n");

  // The ranks were srun's two tasks; the curve is the local run's, bit for bit.
  const std::string log = ReadText(ws / ".benchmake/log/train.log");
  EXPECT_NE(log.find("2 ranks (slurm launcher"), std::string::npos) << log;
  EXPECT_NE(log.find("srun --job-name=bm.train."), std::string::npos) << log;
  EXPECT_NE(log.find("--ntasks=2 --ntasks-per-node=2"), std::string::npos) << log;
  const std::vector<double> slurm = Losses(ws);
  ASSERT_EQ(slurm.size(), 24u);
  EXPECT_EQ(slurm, local);
  // Platform-dependent keys hold the node's facts, probed there.
  EXPECT_NE(ReadText(ws / ".benchmake/platform").find("\"gpu\\\":false"), std::string::npos);

  // A rerun runs no step and no job: the node's facts come from the platform cache.
  const int jobs = static_cast<int>(Jobs().size());
  r = Benchmake(ws, "build");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no work to do"), std::string::npos) << r.output;
  EXPECT_EQ(static_cast<int>(Jobs().size()), jobs);
  EXPECT_EQ(JobStates("train").size(), 1u);
}

// scancel of a running job fails its step naming CANCELLED; nothing is cached.
TEST_F(ClusterE2eTest, AJobCancelledWithScancelFailsItsStep) {
  START_SLURM_OR_SKIP();
  const fs::path ws = Sleepy("5");
  StartBuild(ws);
  const std::string id = WaitRunning("sleepy");
  ASSERT_FALSE(id.empty()) << ReadText(ws / "output.txt") << cluster_->Logs();
  // RUNNING is the allocation; cancelled before srun has started its step, the job fails
  // srun's step creation instead ("Slurm refused the job"), which is not this test's case.
  ASSERT_TRUE(WaitStepStarted(ws, "sleepy")) << ReadText(ws / "output.txt") << cluster_->Logs();
  ASSERT_TRUE(cluster_->Shell("scancel " + id).ok());
  const int status = Wait();
  const std::string out = ReadText(ws / "output.txt");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << out;
  EXPECT_NE(out.find("sleepy failed: Slurm job " + id + " ended CANCELLED"), std::string::npos)
      << out;
  ExpectNothingCached(ws);
}

// Ctrl-C on `benchmake build` cancels the Slurm job of the running step.
TEST_F(ClusterE2eTest, CtrlCCancelsTheJob) {
  START_SLURM_OR_SKIP();
  const fs::path ws = Sleepy("5");
  StartBuild(ws);
  ASSERT_FALSE(WaitRunning("sleepy").empty()) << ReadText(ws / "output.txt") << cluster_->Logs();
  ::kill(-build_, SIGINT);  // the terminal's Ctrl-C: the whole foreground group
  const int status = Wait();
  EXPECT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0));
  // The job passes through COMPLETING while slurmd kills its processes and reports back; on a
  // loaded 2-core CI machine that took more than 10 s once (stop 31's CI).
  auto start = Clock::now();
  while (JobStates("sleepy") != std::vector<std::string>{"CANCELLED"} && SecondsSince(start) < 60)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(JobStates("sleepy"), std::vector<std::string>{"CANCELLED"});
  ExpectNothingCached(ws);
}

// `benchmake build` killed with SIGKILL (with its ninja and its step, or alone) runs no
// handler, and srun, SIGKILLed, cannot release its job. Killed with the build, the step's
// guardian cancels it; the build killed alone, its ninja's guardian interrupts ninja, whose
// step cancels it as on Ctrl-C (base/guardian.h). Before, the job ran on until its time limit.
class KilledBuildTest : public ClusterE2eTest, public ::testing::WithParamInterface<bool> {};

TEST_P(KilledBuildTest, CancelsTheJob) {
  START_SLURM_OR_SKIP();
  const fs::path ws = Sleepy("5");
  StartBuild(ws);
  ASSERT_FALSE(WaitRunning("sleepy").empty()) << ReadText(ws / "output.txt") << cluster_->Logs();
  KillBuild(/*steps=*/GetParam());
  const int status = Wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  auto start = Clock::now();
  while (JobStates("sleepy") != std::vector<std::string>{"CANCELLED"} && SecondsSince(start) < 60)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(JobStates("sleepy"), std::vector<std::string>{"CANCELLED"}) << cluster_->Logs();
  std::printf("CANCELLED %.1f s after the kill\n", SecondsSince(start));
  ExpectNothingCached(ws);
}

INSTANTIATE_TEST_SUITE_P(ClusterE2eTest, KilledBuildTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "WithItsNinjaAndStep" : "Alone";
                         });

// A step past its time limit (one minute: Slurm's unit) fails naming TIMEOUT.
TEST_F(ClusterE2eTest, AStepPastItsTimeLimitFailsNamingTimeout) {
  START_SLURM_OR_SKIP();
  const fs::path ws = Sleepy("1");
  auto start = Clock::now();
  Run r = Benchmake(ws, "build");
  std::printf("a 1-minute job was ended after %.1f s\n", SecondsSince(start));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("sleepy failed: Slurm job \\d+ ended TIMEOUT \\(TimeLimit\\)")))
      << r.output;
  ExpectNothingCached(ws);
}

// A training job preempted after a checkpoint (a job in partition "urgent"
// needs the node) runs again by itself and resumes from that checkpoint: the
// curve is the uninterrupted local run's, bit for bit.
TEST_F(ClusterE2eTest, APreemptedTrainingStepRunsAgainFromItsCheckpoint) {
  START_SLURM_OR_SKIP();
  const int steps = 150;
  const std::vector<double> local = LocalLosses(steps);
  fs::path ws = Workspace("slurm", "slurm", "local", steps, /*checkpoint_every=*/20);
  StartBuild(ws, "build train");
  ASSERT_FALSE(WaitRunning("train").empty()) << ReadText(ws / "output.txt") << cluster_->Logs();
  auto start = Clock::now();
  bool checkpointed = false;
  while (!checkpointed && SecondsSince(start) < 60) {
    std::error_code ec;
    for (auto& p : fs::recursive_directory_iterator(ws / ".benchmake/resume", ec))
      checkpointed |= p.path().filename() == "LATEST";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(checkpointed);
  Result<std::string> urgent = cluster_->Shell("srun --partition=urgent --ntasks=4 true 2>&1");
  EXPECT_TRUE(urgent.ok()) << urgent.status().message();
  const int status = Wait();
  const std::string out = ReadText(ws / "output.txt");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << cluster_->Logs();
  EXPECT_TRUE(std::regex_search(out, std::regex("Slurm job \\d+ ended PREEMPTED; running it again "
                                                "\\(2 of 3\\), from its last checkpoint")))
      << out;
  EXPECT_EQ(JobStates("train"), (std::vector<std::string>{"PREEMPTED", "COMPLETED"}));
  const std::string log = ReadText(ws / ".benchmake/log/train.log");
  EXPECT_NE(log.find("DUE TO PREEMPTION"), std::string::npos) << log;
  EXPECT_NE(log.find("resuming from step"), std::string::npos) << log;
  EXPECT_EQ(Losses(ws), local);
}

// The second launcher: two CPU ranks through OpenMPI's mpirun on localhost
// equal the local launcher's two ranks, bit for bit.
TEST_F(ClusterE2eTest, TwoRanksThroughMpirunEqualTheLocalRun) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "mpirun is not installed (scripts/bootstrap.sh test installs openmpi-bin)";
  const std::vector<double> local = LocalLosses();
  fs::path ws = Workspace("mpirun", "local", "mpirun");
  Run r = Benchmake(ws, "build train");
  ASSERT_EQ(r.exit_code, 0) << r.output << ReadText(ws / ".benchmake/log/train.log");
  const std::string log = ReadText(ws / ".benchmake/log/train.log");
  EXPECT_NE(log.find("2 ranks (mpirun launcher"), std::string::npos) << log;
  EXPECT_EQ(Losses(ws), local);
}

}  // namespace
}  // namespace bm::engine
