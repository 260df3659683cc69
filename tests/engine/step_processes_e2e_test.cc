// End-to-end: what a step's command leaves running, with the real
// `benchmake` binary and real ninja. A step is done only once every process
// its command started has ended, setsid or not; a step killed with SIGKILL,
// or a build interrupted, leaves none of them running (engine/step.h,
// base/guardian.h). The pids a command writes are looked up in /proc.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/support/processes.h"
#include "tests/support/test_data.h"

namespace bm::engine {
namespace {

namespace fs = std::filesystem;
using bm::testing::AncestorNamed;
using bm::testing::ReadText;
using bm::testing::Running;
using bm::testing::WriteText;
using Clock = std::chrono::steady_clock;

class StepProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path dir = bm::testing::BinaryDir();
    binary_ = (dir / "benchmake").string();
    ASSERT_TRUE(fs::exists(binary_)) << binary_ << " (set BENCHMAKE_BINARY_DIR)";
    char templ[] = "/tmp/benchmake-procs-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
    ws_ = root_ / "ws";
    fs::create_directories(ws_);
    ::setenv("BENCHMAKE_CACHE_DIR", (root_ / "cache").c_str(), 1);
    ::setenv("PIDS", (root_ / "pids").c_str(), 1);
  }
  void TearDown() override {
    for (pid_t p : Pids())
      if (p > 0 && Running(p)) ::kill(p, SIGKILL);  // what a failed test left
    std::error_code ec;
    for (auto& p : fs::recursive_directory_iterator(root_, ec))
      fs::permissions(p.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(root_, ec);
  }

  // `benchmake ARGS` in the workspace, in the background; the caller waits.
  pid_t StartInBackground(const std::string& args) {
    std::string cmd = "cd '" + ws_.string() + "' && exec '" + binary_ + "' " + args + " > '" +
                      (root_ / "output.txt").string() + "' 2>&1";
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      ::_exit(127);
    }
    return pid;
  }
  int Wait(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  }
  std::string Output() { return ReadText(root_ / "output.txt"); }
  // The pids the command wrote to $PIDS, in order.
  std::vector<pid_t> Pids() {
    std::vector<pid_t> pids;
    std::istringstream in(ReadText(root_ / "pids"));
    for (pid_t p = 0; in >> p;) pids.push_back(p);
    return pids;
  }
  // Polls `done` for up to `seconds`; its last answer.
  static bool WaitFor(const std::function<bool()>& done, double seconds = 10) {
    auto start = Clock::now();
    while (!done() && std::chrono::duration<double>(Clock::now() - start).count() < seconds)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return done();
  }
  bool NoneRunning(const std::vector<pid_t>& pids) {
    for (pid_t p : pids)
      if (Running(p)) return false;
    return true;
  }

  std::string binary_;
  fs::path root_, ws_;
};

// A daemon (setsid: a session and process group of its own) outlived the
// step, still running, and still writing, after the step reported done and
// its outputs were stored. Now the step ends it first and its log says so.
TEST_F(StepProcessesTest, AStepIsDoneOnlyOnceWhatItsCommandLeftRunningHasEnded) {
  WriteText(ws_ / "BENCHFILE.toml", R"([target.d]
rule = "exec"
command = ["sh", "-c", "setsid sh -c 'while :; do date >> {out}/x; sleep 0.05; done' & echo $! > $PIDS; echo made > {out}/x"]
outputs = ["x"]
)");
  pid_t build = StartInBackground("build");
  int status = Wait(build);
  std::vector<pid_t> pids = Pids();
  ASSERT_EQ(pids.size(), 1u) << Output();
  EXPECT_FALSE(Running(pids[0])) << "the daemon outlived its step";
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << Output();
  EXPECT_NE(ReadText(ws_ / ".benchmake/log/d.log")
                .find("benchmake: 'sh' left 1 process running when it ended; stopped"),
            std::string::npos)
      << ReadText(ws_ / ".benchmake/log/d.log");
}

// `kill -9` of `benchmake step` while its command runs a tree three levels
// deep, one branch in its own session: within a few seconds none of it runs.
// Before, all of it kept running (a GPU job holding the GPU the next step
// measures on).
TEST_F(StepProcessesTest, AStepKilledWithSigkillLeavesNoProcessOfItsCommand) {
  WriteText(ws_ / "BENCHFILE.toml", R"([target.tree]
rule = "exec"
command = ["sh", "-c", "echo $$ >> $PIDS; sh -c 'echo $$ >> $PIDS; setsid sleep 300 & echo $! >> $PIDS; sleep 300 & echo $! >> $PIDS; wait' & wait"]
outputs = ["x"]
)");
  pid_t build = StartInBackground("build");
  ASSERT_TRUE(WaitFor([&] { return Pids().size() == 4; })) << Output();
  const std::vector<pid_t> tree = Pids();
  for (pid_t p : tree) EXPECT_TRUE(Running(p)) << p;
  const pid_t step = AncestorNamed(tree[0], "benchmake");
  ASSERT_GT(step, 0) << "no `benchmake step` above the command";
  ASSERT_NE(step, build) << "found the build, not its step";
  ASSERT_EQ(::kill(step, SIGKILL), 0);
  int status = Wait(build);
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the build fails";
  EXPECT_TRUE(WaitFor([&] { return NoneRunning(tree); }, 3))
      << "still running: " << ReadText(root_ / "pids");
}

// Ctrl-C: ninja forwards SIGINT to the step, the step to its command's
// group; a grandchild that left the group (setsid) never got it and kept
// running after `benchmake build` had died of the signal.
TEST_F(StepProcessesTest, AnInterruptedBuildLeavesNoGrandchildRunning) {
  WriteText(ws_ / "BENCHFILE.toml", R"([target.i]
rule = "exec"
command = ["sh", "-c", "setsid sleep 300 & echo $! >> $PIDS; wait"]
outputs = ["x"]
)");
  pid_t build = StartInBackground("build");
  ASSERT_TRUE(WaitFor([&] { return Pids().size() == 1; })) << Output();
  const std::vector<pid_t> pids = Pids();
  ASSERT_EQ(::kill(build, SIGINT), 0);
  int status = Wait(build);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << Output();
  EXPECT_FALSE(Running(pids[0])) << "the setsid grandchild outlived the interrupted build";
}

// A build stopped with SIGTERM (a CI job's or a batch system's time limit, a
// `kill`) passes it to each step through ninja, which waits for its job: the
// step is ninja's child itself (`exec benchmake step`), so its command gets
// its grace to stop (a checkpoint, a cancelled job). With a shell between
// ninja and the step, the shell died of SIGTERM at once, ninja exited, and
// the step, its output pipe gone, died before its command had stopped (the
// trap below never wrote). SIGINT the shell waits out. Also for a step that
// streams its progress (ninja's console pool: in ninja's own process group,
// which gets the signal from benchmake directly).
class StoppedBuildTest : public StepProcessesTest, public ::testing::WithParamInterface<bool> {};

TEST_P(StoppedBuildTest, GivesItsStepsCommandItsGrace) {
  WriteText(ws_ / "BENCHFILE.toml", std::string(R"([target.g]
rule = "exec"
command = ["sh", "-c", "trap 'sleep 1; echo stopped > $MARK; exit 1' INT TERM; echo $$ >> $PIDS; while :; do sleep 0.05; done"]
outputs = ["x"]
)") + (GetParam() ? "progress = true\n" : ""));
  const fs::path mark = root_ / "mark";
  ::setenv("MARK", mark.c_str(), 1);
  pid_t build = StartInBackground("build");
  ASSERT_TRUE(WaitFor([&] { return Pids().size() == 1; })) << Output();
  ASSERT_EQ(::kill(build, SIGTERM), 0);
  int status = Wait(build);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << Output();
  EXPECT_EQ(ReadText(mark), "stopped\n") << Output();
  EXPECT_FALSE(Running(Pids()[0]));
}

INSTANTIATE_TEST_SUITE_P(StepProcessesTest, StoppedBuildTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "InTheConsolePool" : "InItsOwnGroup";
                         });

}  // namespace
}  // namespace bm::engine
