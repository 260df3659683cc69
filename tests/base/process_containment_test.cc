// What a command leaves behind: processes that left its process group
// (setsid, a double fork) or outlive it are stopped with it, and die with the
// process that runs it, even when that one is SIGKILLed (base/guardian.h).
// Real processes; each test checks /proc for the pids the command wrote.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "base/subprocess_runner.h"
#include "tests/support/processes.h"
#include "tests/support/test_data.h"

namespace bm::containment_test {
namespace {

using Clock = std::chrono::steady_clock;
using bm::testing::PrivateTempPath;
using bm::testing::ReadText;
using bm::testing::Running;
using bm::testing::WriteText;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Command Shell(const std::string& script) {
  Command c;
  c.argv = {"sh", "-c", script};
  return c;
}

// Seen not running once is gone: a process that is exiting can read as gone and then, for one
// more read of /proc, as running (CI of b0ec409 failed on that flip, in 0.4 s of a 3 s wait).
bool GoneWithin(pid_t pid, double seconds) {
  auto start = Clock::now();
  for (;;) {
    if (!Running(pid)) return true;
    if (Since(start) >= seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// A process of its own that runs `c` under a SubprocessRunner and exits: the
// benchmake a test kills or interrupts. The caller waits for it.
pid_t RunInAChild(const Command& c) {
  const pid_t pid = ::fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    SubprocessRunner runner;
    (void)runner.Run(c);
    ::_exit(0);
  }
  return pid;
}

// The pids written (space or newline separated) to `path`, once it holds
// `count` of them (waiting up to 10 s).
std::vector<pid_t> PidsIn(const std::string& path, size_t count) {
  auto start = Clock::now();
  std::vector<pid_t> pids;
  while (Since(start) < 10) {
    pids.clear();
    std::istringstream in(ReadText(path));
    for (pid_t p = 0; in >> p;) pids.push_back(p);
    if (pids.size() >= count) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pids;
}

// Kills what a failing test left, so that it does not outlive the test run.
void Reap(const std::vector<pid_t>& pids) {
  for (pid_t p : pids)
    if (p > 0 && Running(p)) ::kill(p, SIGKILL);
}

// `setsid` puts the background job in a session (and group) of its own: the
// group kill never reached it, and it outlived the command and the step.
TEST(ProcessContainmentTest, ADaemonInItsOwnSessionIsStoppedWhenTheCommandEnds) {
  const std::string pid_file = PrivateTempPath("daemon.pid"), log = PrivateTempPath("daemon.log");
  SubprocessRunner runner;
  Command c = Shell("setsid sleep 30 & echo $! > " + pid_file + "; echo done");
  c.log_path = log;
  auto start = Clock::now();
  Result<CommandResult> r = runner.Run(c);
  const double took = Since(start);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<pid_t> daemon = PidsIn(pid_file, 1);
  ASSERT_EQ(daemon.size(), 1u);
  EXPECT_FALSE(Running(daemon[0])) << "gone by the time Run returns";
  EXPECT_TRUE(r->success()) << "the command's own exit status";
  EXPECT_LT(took, 3) << "sleep ends on SIGTERM: no grace waited for";
  EXPECT_EQ(ReadText(log),
            "done\nbenchmake: 'sh' left 1 process running when it ended; stopped (SIGTERM, then "
            "SIGKILL after 5 s)\n");
  Reap(daemon);
}

// A double fork into a new session, ignoring SIGTERM: SIGKILL after the grace.
TEST(ProcessContainmentTest, ADaemonIgnoringSigtermIsKilledAfterTheGrace) {
  const std::string pid_file = PrivateTempPath("stubborn.pid");
  SubprocessRunner runner;
  Command c = Shell("(trap '' TERM; setsid sh -c 'echo $$ > " + pid_file +
                    "; exec sleep 30' &); while [ ! -s " + pid_file + " ]; do sleep 0.01; done");
  c.interrupt_grace_seconds = 0.3;
  auto start = Clock::now();
  Result<CommandResult> r = runner.Run(c);
  const double took = Since(start);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->success());
  std::vector<pid_t> daemon = PidsIn(pid_file, 1);
  ASSERT_EQ(daemon.size(), 1u);
  EXPECT_FALSE(Running(daemon[0]));
  EXPECT_GE(took, 0.3) << "it had its grace";
  EXPECT_LT(took, 3);
  Reap(daemon);
}

// `benchmake step` killed with SIGKILL: nothing of its command's tree (three
// levels, one of them in its own session) keeps running, on a GPU the
// allocator has handed back. Before, the command was not even told.
TEST(ProcessContainmentTest, AKilledRunnerTakesTheCommandsWholeTreeWithIt) {
  const std::string pids = PrivateTempPath("tree.pids");
  pid_t runner_pid =
      RunInAChild(Shell("sh -c 'setsid sleep 30 & echo $! >> " + pids + "; echo $$ >> " + pids +
                        "; sleep 30' & echo $$ >> " + pids + "; wait"));
  std::vector<pid_t> tree = PidsIn(pids, 3);
  ASSERT_EQ(tree.size(), 3u) << ReadText(pids);
  for (pid_t p : tree) EXPECT_TRUE(Running(p)) << p;
  ASSERT_EQ(::kill(runner_pid, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(runner_pid, &wstatus, 0), runner_pid);
  for (pid_t p : tree) EXPECT_TRUE(GoneWithin(p, 3)) << "pid " << p << " outlived the runner";
  Reap(tree);
}

// The lines of `path` once its guardians (`guardians`) have ended (waiting up
// to 20 s): all a cancel command could write has been written by then.
std::string AfterGuardians(const std::string& path, const std::vector<pid_t>& guardians) {
  for (pid_t g : guardians) EXPECT_TRUE(GoneWithin(g, 20)) << "guardian " << g;
  return ReadText(path);
}

// `benchmake step` killed with SIGKILL while srun runs: nobody is left to run
// `scancel` (Command::on_interrupt), which a SIGKILLed srun cannot release.
// The guardian runs it once, with the command's environment, while the
// command still runs, and then stops the tree. Before, the job was left.
TEST(ProcessContainmentTest, AKilledRunnerRunsTheCommandsCancelOnce) {
  const std::string pids = PrivateTempPath("cancel.pids"),
                    cancelled = PrivateTempPath("cancel.out");
  Command c = Shell("echo $$ $PPID > " + pids + "; exec sleep 30");
  c.env["WHY"] = "killed";
  c.on_interrupt = {"sh", "-c",
                    "if kill -0 $(cut -d' ' -f1 " + pids + "); then echo cancelled $WHY; " +
                        "else echo cancelled late; fi >> " + cancelled};
  pid_t runner_pid = RunInAChild(c);
  std::vector<pid_t> tree = PidsIn(pids, 2);  // the command, its guardian
  ASSERT_EQ(tree.size(), 2u) << ReadText(pids);
  EXPECT_EQ(ReadText("/proc/" + std::to_string(tree[1]) + "/comm"), "benchmake-guard\n");
  ASSERT_EQ(::kill(runner_pid, SIGKILL), 0);
  ASSERT_EQ(::waitpid(runner_pid, nullptr, 0), runner_pid);
  EXPECT_EQ(AfterGuardians(cancelled, {tree[1]}), "cancelled killed\n")
      << "run once, before the command was stopped";
  EXPECT_TRUE(GoneWithin(tree[0], 3)) << "the command outlived the runner";
  Reap(tree);
}

// The same for each member of a group started from another thread than the
// process's first: the one that forked the guardians may die before the
// others of a killed process.
TEST(ProcessContainmentTest, AKilledGroupRunsEachMembersCancelOnce) {
  const std::string pids = PrivateTempPath("group_cancel.pids"),
                    cancelled = PrivateTempPath("group_cancel.out");
  pid_t runner_pid = ::fork();
  ASSERT_GE(runner_pid, 0);
  if (runner_pid == 0) {
    std::vector<Command> members;
    for (const char* rank : {"0", "1"}) {
      members.push_back(Shell("echo $$ $PPID >> " + pids + "; exec sleep 30"));
      members.back().on_interrupt = {"sh", "-c",
                                     std::string("echo cancelled ") + rank + " >> " + cancelled};
    }
    std::thread run([&] {
      SubprocessRunner runner;
      (void)runner.RunGroup(members, {});
    });
    run.join();
    ::_exit(0);
  }
  std::vector<pid_t> tree = PidsIn(pids, 4);
  ASSERT_EQ(tree.size(), 4u) << ReadText(pids);
  ASSERT_EQ(::kill(runner_pid, SIGKILL), 0);
  ASSERT_EQ(::waitpid(runner_pid, nullptr, 0), runner_pid);
  std::string out = AfterGuardians(cancelled, {tree[1], tree[3]});
  EXPECT_TRUE(out == "cancelled 0\ncancelled 1\n" || out == "cancelled 1\ncancelled 0\n") << out;
  for (pid_t p : {tree[0], tree[2]}) EXPECT_TRUE(GoneWithin(p, 3)) << p;
  Reap(tree);
}

// Ninja under `benchmake build` killed with SIGKILL: its guardian interrupts
// it as benchmake's handler would have (SIGTERM to its group, then the
// cancel command) and gives it its grace, so that ninja stops its steps and
// they cancel their own work; what is still running after the grace (here a
// daemon ignoring SIGTERM) is SIGKILLed. Before, ninja was left running.
TEST(ProcessContainmentTest, AnOrphanedCommandIsInterruptedAndGivenItsGrace) {
  const std::string pids = PrivateTempPath("orphan.pids"), said = PrivateTempPath("orphan.out");
  const std::string daemon = PrivateTempPath("orphan.daemon");
  // The daemon's pid once it has left the group and ignores SIGTERM ($! is
  // known before either holds).
  Command c = Shell("trap 'sleep 0.3; echo stopped >> " + said + "; exit 1' TERM; " +
                    "setsid sh -c 'trap \"\" TERM; echo $$ > " + daemon +
                    "; while :; do sleep 0.05; done' & while [ ! -s " + daemon +
                    " ]; do sleep 0.01; done; echo $(cat " + daemon + ") $$ $PPID > " + pids +
                    "; while :; do sleep 0.05; done");
  c.on_interrupt = {"sh", "-c", "echo cancelled >> " + said};
  c.interrupt_when_orphaned = true;
  c.interrupt_grace_seconds = 4;
  pid_t runner_pid = RunInAChild(c);
  std::vector<pid_t> tree = PidsIn(pids, 3);  // the daemon, the command, its guardian
  ASSERT_EQ(tree.size(), 3u) << ReadText(pids);
  ASSERT_EQ(::kill(runner_pid, SIGKILL), 0);
  ASSERT_EQ(::waitpid(runner_pid, nullptr, 0), runner_pid);
  auto killed = Clock::now();
  EXPECT_TRUE(GoneWithin(tree[1], 3)) << "the command ended on its SIGTERM";
  // The kernel may send the death signal twice (base/guardian.cc): the second
  // one, the command gone, must not end the daemon's grace.
  ::kill(tree[2], SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it would kill within 10 ms
  std::string out = ReadText(said);
  EXPECT_TRUE(out == "cancelled\nstopped\n" || out == "stopped\ncancelled\n")
      << "the command had time to end by itself; the cancel ran once: " << out;
  if (Since(killed) < 2) {
    EXPECT_TRUE(Running(tree[0])) << "the daemon is in its grace";
  }
  EXPECT_TRUE(GoneWithin(tree[0], 10)) << "the daemon outlived the grace";
  EXPECT_EQ(AfterGuardians(said, {tree[2]}), out) << "nothing ran twice";
  Reap(tree);
}

// A command that ended, or that benchmake stopped itself (a timeout), stands
// for nothing left to cancel: the guardian never runs its on_interrupt, not
// even when benchmake dies while it still stops what the command left.
TEST(ProcessContainmentTest, NoCancelForACommandThatEndedOrTimedOut) {
  const std::string cancelled = PrivateTempPath("no_cancel.out");
  const std::vector<std::string> cancel = {"sh", "-c", "echo cancelled >> " + cancelled};
  SubprocessRunner runner;
  Command c = Shell("true");
  c.on_interrupt = cancel;
  Result<CommandResult> r = runner.Run(c);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->success());
  c = Shell("sleep 30");
  c.on_interrupt = cancel;
  c.timeout_seconds = 0.3;
  r = runner.Run(c);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(ReadText(cancelled), "") << "ended, or timed out";

  // The command has ended; its guardian gives the daemon it left (which
  // ignores SIGTERM) its grace when the runner is killed.
  const std::string pids = PrivateTempPath("no_cancel.pids");
  Command left = Shell("trap '' TERM; setsid sleep 30 & echo $! $$ $PPID > " + pids);
  left.on_interrupt = cancel;
  left.interrupt_grace_seconds = 30;
  pid_t runner_pid = RunInAChild(left);
  std::vector<pid_t> tree = PidsIn(pids, 3);  // the daemon, the command, the guardian
  ASSERT_EQ(tree.size(), 3u) << ReadText(pids);
  EXPECT_TRUE(GoneWithin(tree[1], 3)) << "the command ended";
  EXPECT_TRUE(Running(tree[0])) << "the daemon is in its grace";
  ASSERT_EQ(::kill(runner_pid, SIGKILL), 0);
  ASSERT_EQ(::waitpid(runner_pid, nullptr, 0), runner_pid);
  EXPECT_EQ(AfterGuardians(cancelled, {tree[2]}), "") << "the command had ended";
  EXPECT_TRUE(GoneWithin(tree[0], 3)) << "stopped at once all the same";
  Reap(tree);
}

// Interrupted, benchmake runs on_interrupt itself; killed with SIGKILL during
// the grace that follows, its guardian does not run it again.
TEST(ProcessContainmentTest, ARunnerKilledAfterAnInterruptCancelsOnce) {
  const std::string pids = PrivateTempPath("interrupt_cancel.pids"),
                    cancelled = PrivateTempPath("interrupt_cancel.out");
  Command c = Shell("trap '' INT; echo $$ $PPID > " + pids + "; sleep 30");
  c.on_interrupt = {"sh", "-c", "echo cancelled >> " + cancelled};
  c.interrupt_grace_seconds = 30;
  pid_t runner_pid = RunInAChild(c);
  std::vector<pid_t> tree = PidsIn(pids, 2);
  ASSERT_EQ(tree.size(), 2u) << ReadText(pids);
  ::kill(runner_pid, SIGINT);
  auto start = Clock::now();
  while (ReadText(cancelled).empty() && Since(start) < 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(ReadText(cancelled), "cancelled\n") << "the interrupt ran it";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // in the grace
  EXPECT_TRUE(Running(tree[0]));
  ASSERT_EQ(::kill(runner_pid, SIGKILL), 0);
  ASSERT_EQ(::waitpid(runner_pid, nullptr, 0), runner_pid);
  EXPECT_EQ(AfterGuardians(cancelled, {tree[1]}), "cancelled\n") << "not run again";
  EXPECT_TRUE(GoneWithin(tree[0], 3));
  Reap(tree);
}

// Ctrl-C: the forwarded SIGINT reaches the command's group, not a process
// that left it; that one is stopped before benchmake dies of the signal.
TEST(ProcessContainmentTest, AnInterruptStopsWhatLeftTheGroupBeforeDying) {
  const std::string pid_file = PrivateTempPath("interrupt.pid");
  pid_t runner_pid = RunInAChild(Shell("setsid sleep 30 & echo $! > " + pid_file + "; wait"));
  std::vector<pid_t> daemon = PidsIn(pid_file, 1);
  ASSERT_EQ(daemon.size(), 1u);
  ::kill(runner_pid, SIGINT);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(runner_pid, &wstatus, 0), runner_pid);
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGINT) << "dies of the signal";
  EXPECT_FALSE(Running(daemon[0])) << "gone before benchmake died";
  Reap(daemon);
}

TEST(ProcessContainmentTest, ATimeoutStopsWhatLeftTheGroup) {
  const std::string pid_file = PrivateTempPath("timeout.pid");
  SubprocessRunner runner;
  Command c = Shell("setsid sleep 30 & echo $! > " + pid_file + "; sleep 30");
  c.timeout_seconds = 0.3;
  Result<CommandResult> r = runner.Run(c);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  std::vector<pid_t> daemon = PidsIn(pid_file, 1);
  ASSERT_EQ(daemon.size(), 1u);
  EXPECT_FALSE(Running(daemon[0]));
  Reap(daemon);
}

// A rank's workers (torchrun's, in their own sessions) stop with the rank.
TEST(ProcessContainmentTest, AStoppedGroupMembersDaemonStopsWithIt) {
  const std::string pid_file = PrivateTempPath("member.pid");
  SubprocessRunner runner;
  std::vector<Command> members = {
      Shell("while [ ! -s " + pid_file + " ]; do sleep 0.01; done; exit 1"),
      Shell("setsid sleep 30 & echo $! > " + pid_file + "; sleep 30")};
  GroupOptions options;
  options.grace_seconds = 0.3;
  Result<GroupResult> r = runner.RunGroup(members, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->first_failure, 0);
  EXPECT_TRUE(r->results[1].stopped);
  std::vector<pid_t> daemon = PidsIn(pid_file, 1);
  ASSERT_EQ(daemon.size(), 1u);
  EXPECT_FALSE(Running(daemon[0]));
  Reap(daemon);
}

// The guardian itself killed by hand (kill -9 of its pid): the command dies
// with it (PR_SET_PDEATHSIG), and is reported killed as the guardian was.
TEST(ProcessContainmentTest, AGuardianKilledByHandTakesTheCommandWithIt) {
  const std::string pid_file = PrivateTempPath("guardian.pids");
  Result<CommandResult> r = Errorf(ErrorCode::kFailed, "not run");
  std::thread run([&] {
    SubprocessRunner runner;
    // The pids are written 0.5 s after the command started: by then its guardian has
    // reported the start (a guardian killed before that report is a command that could not
    // start, "its guardian process ended at once": 12 runs in 300 under load killed it there).
    r = runner.Run(Shell("sleep 0.5; echo $$ $PPID > " + pid_file + "; exec sleep 30"));
  });
  std::vector<pid_t> pids = PidsIn(pid_file, 2);
  ASSERT_EQ(pids.size(), 2u);
  EXPECT_EQ(ReadText("/proc/" + std::to_string(pids[1]) + "/comm"), "benchmake-guard\n");
  ::kill(pids[1], SIGKILL);
  run.join();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->term_signal, SIGKILL);
  EXPECT_TRUE(GoneWithin(pids[0], 2)) << "the command outlived its guardian";
  Reap(pids);
}

// The guardian in between changes nothing a command can see of how it ran:
// its exit status, the signal that killed it, its output, its time.
TEST(ProcessContainmentTest, AWellBehavedCommandIsUnaffected) {
  const std::string log = PrivateTempPath("plain.log");
  SubprocessRunner runner;
  Command c = Shell("echo out; echo err >&2; exit 3");
  c.log_path = log;
  auto start = Clock::now();
  Result<CommandResult> r = runner.Run(c);
  EXPECT_LT(Since(start), 0.5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->term_signal, 0);
  EXPECT_EQ(ReadText(log), "out\nerr\n") << "nothing added";

  r = runner.Run(Shell("kill -SEGV $$"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->term_signal, SIGSEGV);

  start = Clock::now();
  r = runner.Run(Shell("sleep 0.3"));
  const double took = Since(start);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->success());
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 0.8);
}

// A process SIGKILL cannot end (another user's, one stuck in the kernel) is
// given up on 10 s after the first SIGKILL and named in the command's log,
// rather than hanging the step for ever. Stuck for real: the command's
// background job is frozen in a cgroup v1 freezer, where a SIGKILL stays
// pending (state D) until it is thawed.
TEST(ProcessContainmentTest, WhatSigkillCannotEndIsGivenUpOnAndNamed) {
  const std::filesystem::path freezer =
      "/sys/fs/cgroup/freezer/benchmake-test-" + std::to_string(::getpid());
  std::error_code ec;
  if (!std::filesystem::create_directory(freezer, ec))
    GTEST_SKIP() << "needs a writable cgroup v1 freezer (root, /sys/fs/cgroup/freezer): "
                 << ec.message();
  const std::string pid_file = PrivateTempPath("frozen.pid"), frozen = PrivateTempPath("frozen"),
                    log = PrivateTempPath("frozen.log");
  Command c = Shell("sleep 60 & echo $! > " + pid_file + "; while [ ! -e " + frozen +
                    " ]; do sleep 0.01; done");
  c.log_path = log;
  c.interrupt_grace_seconds = 0.2;
  SubprocessRunner runner;
  Result<CommandResult> r = Errorf(ErrorCode::kFailed, "Run has not returned");
  double took = 0;
  std::atomic<bool> done = false;
  std::thread run([&] {
    auto start = Clock::now();
    r = runner.Run(c);
    took = Since(start);
    done = true;
  });
  auto thaw = [&] { WriteText(freezer / "freezer.state", "THAWED\n"); };
  const std::vector<pid_t> stuck = PidsIn(pid_file, 1);
  if (stuck.size() == 1) {
    WriteText(freezer / "cgroup.procs", std::to_string(stuck[0]) + "\n");
    WriteText(freezer / "freezer.state", "FROZEN\n");
    for (auto start = Clock::now();
         ReadText(freezer / "freezer.state") != "FROZEN\n" && Since(start) < 10;)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  WriteText(frozen, "");
  // Never given up on, Run would wait for ever: thawed, the process dies.
  for (auto start = Clock::now(); !done && Since(start) < 30;)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!done) thaw();
  run.join();
  const std::string said = ReadText(log);
  const bool still_there = stuck.size() == 1 && Running(stuck[0]);
  thaw();
  const bool gone_once_thawed = stuck.size() == 1 && GoneWithin(stuck[0], 5);
  Reap(stuck);
  std::filesystem::remove(freezer, ec);
  ASSERT_EQ(stuck.size(), 1u);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->success());
  EXPECT_GE(took, 10) << "given up on 10 s after the first SIGKILL";
  EXPECT_LT(took, 20);
  EXPECT_NE(said.find("1 process that 'sh' started did not end within 10 s of SIGKILL"),
            std::string::npos)
      << said;
  EXPECT_TRUE(still_there) << "SIGKILL could not end it while frozen";
  EXPECT_TRUE(gone_once_thawed) << "its pending SIGKILL ended it once thawed";
}

}  // namespace
}  // namespace bm::containment_test
