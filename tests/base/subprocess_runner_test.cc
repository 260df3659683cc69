#include "base/subprocess_runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/processes.h"
#include "tests/support/test_data.h"

namespace bm {
namespace {

using bm::testing::PrivateTempPath;
using bm::testing::ReadText;
using bm::testing::Running;

TEST(SubprocessRunnerTest, ExitCodeEnvCwdAndLog) {
  std::string log = PrivateTempPath("runner_test.log");
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
  EXPECT_EQ(ReadText(log), "out bar\n/tmp\nerr\n");
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
  std::string log = PrivateTempPath("runner_tee.log");
  SubprocessRunner runner;
  Command c;
  c.argv = {"sh", "-c", "echo live"};
  c.log_path = log;
  c.echo_to_terminal = true;
  ASSERT_TRUE(runner.Run(c)->success());
  EXPECT_EQ(ReadText(log), "live\n");
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Command Sh(const std::string& script) {
  Command c;
  c.argv = {"sh", "-c", script};
  return c;
}

TEST(SubprocessRunnerGroupTest, AllSucceedEachWithItsEnvAndLog) {
  std::string dir = PrivateTempPath("group");
  std::filesystem::create_directories(dir);
  SubprocessRunner runner;
  std::vector<Command> group;
  for (int i = 0; i < 3; ++i) {
    Command c = Sh("sleep 0.1; echo member $ME");
    c.env["ME"] = std::to_string(i);
    c.log_path = dir + "/group_ok." + std::to_string(i) + ".log";
    group.push_back(c);
  }
  Result<GroupResult> r = runner.RunGroup(group, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->success());
  ASSERT_EQ(r->results.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(r->results[i].success());
    EXPECT_EQ(ReadText(group[i].log_path), "member " + std::to_string(i) + "\n");
  }
}

// The first failure stops the rest at once, their children included: a member
// that fails after 0.2 s ends a group whose others would sleep for 30 s.
TEST(SubprocessRunnerGroupTest, FirstFailureStopsTheOthersAndTheirChildren) {
  std::string pidfile = PrivateTempPath("group_grandchild.pid");
  SubprocessRunner runner;
  std::vector<Command> group = {Sh("sleep 30"), Sh("sleep 0.2; exit 3"),
                                Sh("sleep 30 & echo $! > " + pidfile + "; wait")};
  auto start = std::chrono::steady_clock::now();
  Result<GroupResult> r = runner.RunGroup(group, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_LT(SecondsSince(start), 5);
  EXPECT_FALSE(r->success());
  EXPECT_EQ(r->first_failure, 1);
  EXPECT_EQ(r->results[1].exit_code, 3);
  EXPECT_FALSE(r->results[1].stopped);
  for (int i : {0, 2}) {
    EXPECT_TRUE(r->results[i].stopped) << i;
    EXPECT_EQ(r->results[i].term_signal, SIGTERM) << i;
    EXPECT_FALSE(r->results[i].success()) << i;
  }
  pid_t grandchild = std::stoi(ReadText(pidfile));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(Running(grandchild)) << "the stopped member's child died with its group";
}

// A member that ignores SIGTERM is killed grace_seconds later; one killed by
// a signal is a failure that names it.
TEST(SubprocessRunnerGroupTest, SigtermIgnoredMeansSigkillAfterTheGrace) {
  SubprocessRunner runner;
  std::vector<Command> group = {Sh("trap '' TERM; sleep 30 & wait; sleep 30"),
                                Sh("sleep 0.2; kill -9 $$")};
  GroupOptions options;
  options.grace_seconds = 0.3;
  auto start = std::chrono::steady_clock::now();
  Result<GroupResult> r = runner.RunGroup(group, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_LT(SecondsSince(start), 5);
  EXPECT_EQ(r->first_failure, 1);
  EXPECT_EQ(r->results[1].term_signal, SIGKILL);
  EXPECT_TRUE(r->results[0].stopped);
  EXPECT_EQ(r->results[0].term_signal, SIGKILL);
}

// A member told to stop (SIGTERM, which it ignores here, as a process busy
// dying does not act on it) that then dies of a SIGKILL the group never sent
// — kill -9 from outside, the OOM killer — failed by itself: it is not called
// stopped. (A rank killed with -9 closes its sockets before it can be reaped,
// so its peer may fail, and be seen, first.)
TEST(SubprocessRunnerGroupTest, AMemberKilledFromOutsideAfterBeingToldToStopIsNotStopped) {
  SubprocessRunner runner;
  std::vector<Command> group = {Sh("sleep 0.1; exit 75"),
                                Sh("trap '' TERM; sleep 0.3; kill -9 $$")};
  GroupOptions options;
  options.grace_seconds = 10;  // the group's own SIGKILL would come far later
  auto start = std::chrono::steady_clock::now();
  Result<GroupResult> r = runner.RunGroup(group, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_LT(SecondsSince(start), 5);
  EXPECT_EQ(r->first_failure, 0);
  EXPECT_EQ(r->results[1].term_signal, SIGKILL);
  EXPECT_FALSE(r->results[1].stopped);
}

TEST(SubprocessRunnerGroupTest, AMemberTimingOutFailsTheGroup) {
  SubprocessRunner runner;
  std::vector<Command> group = {Sh("sleep 30"), Sh("sleep 30")};
  group[1].timeout_seconds = 0.2;
  auto start = std::chrono::steady_clock::now();
  Result<GroupResult> r = runner.RunGroup(group, {});
  ASSERT_TRUE(r.ok());
  EXPECT_LT(SecondsSince(start), 5);
  EXPECT_EQ(r->first_failure, 1);
  EXPECT_TRUE(r->results[1].timed_out);
  EXPECT_TRUE(r->results[0].stopped);
}

// A member left running long after a peer succeeded is timed out: no member
// waits forever for one that has gone.
TEST(SubprocessRunnerGroupTest, StragglersAfterASuccessAreTimedOut) {
  SubprocessRunner runner;
  std::vector<Command> group = {Sh("exit 0"), Sh("sleep 30")};
  GroupOptions options;
  options.straggler_seconds = 0.3;
  auto start = std::chrono::steady_clock::now();
  Result<GroupResult> r = runner.RunGroup(group, options);
  ASSERT_TRUE(r.ok());
  EXPECT_LT(SecondsSince(start), 5);
  EXPECT_EQ(r->first_failure, 1);
  EXPECT_TRUE(r->results[0].success());
  EXPECT_TRUE(r->results[1].timed_out);
}

// True when some process's command line contains `needle`.
bool AnyProcessRuns(const std::string& needle) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string cmdline = ReadText(entry.path().string() + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(SubprocessRunnerGroupTest, AMemberThatCannotStartKillsTheStartedOnes) {
  SubprocessRunner runner;
  Command missing;
  missing.argv = {"benchmake-no-such-program"};
  Command sleeper;
  sleeper.argv = {"sleep", "31.2345"};
  std::vector<Command> group = {sleeper, missing};
  auto start = std::chrono::steady_clock::now();
  Result<GroupResult> r = runner.RunGroup(group, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_LT(SecondsSince(start), 5);
  EXPECT_FALSE(AnyProcessRuns("sleep 31.2345"));
}

TEST(SubprocessRunnerGroupTest, EchoedMemberStillWritesItsLog) {
  std::string log = PrivateTempPath("group_tee.log");
  SubprocessRunner runner;
  std::vector<Command> group = {Sh("echo live"), Sh("true")};
  group[0].log_path = log;
  group[0].echo_to_terminal = true;
  Result<GroupResult> r = runner.RunGroup(group, {});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->success());
  EXPECT_EQ(ReadText(log), "live\n");
}

// Interrupted while a command runs, benchmake runs the command's on_interrupt
// (how a Slurm job is cancelled) and waits for it, then forwards the signal to
// the command, and dies of the signal itself. Cancel first: srun passes a
// SIGTERM on to its tasks, and their death would end the job FAILED before
// scancel could end it CANCELLED.
TEST(SubprocessRunnerTest, InterruptRunsOnInterruptThenDies) {
  const std::string dir = PrivateTempPath("interrupt");
  std::filesystem::create_directories(dir);
  const std::string started = dir + "/interrupt.started", cancelled = dir + "/interrupt.cancelled",
                    forwarded = dir + "/interrupt.forwarded";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    SubprocessRunner runner;
    Command c = Sh("trap 'kill $!; test -e " + cancelled + " && echo INT after the cancel > " +
                   forwarded + "; exit 130' INT; touch " + started + "; sleep 30 & wait");
    c.env["WHY"] = "ctrl-c";
    c.on_interrupt = {"sh", "-c", "sleep 0.2; echo cancelled $WHY > " + cancelled};
    (void)runner.Run(c);
    ::_exit(0);
  }
  auto start = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(started) && SecondsSince(start) < 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(std::filesystem::exists(started));
  ::kill(pid, SIGINT);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGINT) << "dies of the signal";
  EXPECT_EQ(ReadText(cancelled), "cancelled ctrl-c\n")
      << "on_interrupt ran, with the command's env, "
         "and was waited for";
  for (int i = 0; i < 100 && !std::filesystem::exists(forwarded); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(ReadText(forwarded), "INT after the cancel\n")
      << "the command got the signal once on_interrupt had ended";
}

// The pid a command wrote to `path` once it exists (waiting up to 10 s), or 0.
pid_t PidWrittenTo(const std::string& path) {
  auto start = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(path) && SecondsSince(start) < 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // written whole
  return static_cast<pid_t>(std::atoi(ReadText(path).c_str()));
}

// Whether `pid` ends within `seconds`.
bool EndsWithin(pid_t pid, double seconds) {
  auto start = std::chrono::steady_clock::now();
  while (Running(pid) && SecondsSince(start) < seconds)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return !Running(pid);
}

// Forks a process that runs `c` through the runner, waits until the command
// wrote its pids (`pid_file`), interrupts the process with `sig` (SIGINT:
// what Ctrl-C sends), and returns its wait status.
int InterruptWhileRunning(const Command& c, const std::string& pid_file, int sig = SIGINT) {
  pid_t pid = ::fork();
  if (pid == 0) {
    SubprocessRunner runner;
    (void)runner.Run(c);
    ::_exit(0);
  }
  (void)PidWrittenTo(pid_file);
  ::kill(pid, sig);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  return wstatus;
}

// Ctrl-C while a shell runs a background job: the shell dies of SIGINT, but a
// non-interactive shell's background jobs ignore SIGINT (POSIX), so the job
// outlived the step (ninja leaves it too). What is left of the command's
// group once the command has ended is killed before benchmake dies.
TEST(SubprocessRunnerTest, InterruptKillsWhatTheCommandLeftRunning) {
  const std::string job = PrivateTempPath("interrupt.job");
  int wstatus = InterruptWhileRunning(Sh("sleep 30 & echo $! > " + job + "; wait"), job);
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGINT) << "dies of the signal";
  pid_t background = PidWrittenTo(job);
  ASSERT_GT(background, 0);
  EXPECT_TRUE(EndsWithin(background, 2)) << "the background job is gone";
  if (Running(background)) ::kill(background, SIGKILL);
}

// A command that ignores SIGINT and SIGTERM has its interrupt grace to end;
// then it and its children are killed, and benchmake dies of the signal.
TEST(SubprocessRunnerTest, InterruptKillsACommandIgnoringItAfterItsGrace) {
  const std::string pids = PrivateTempPath("interrupt.pids");
  Command c = Sh("trap '' INT TERM; sleep 30 & echo $$ $! > " + pids + "; wait");
  c.interrupt_grace_seconds = 0.3;
  auto start = std::chrono::steady_clock::now();
  int wstatus = InterruptWhileRunning(c, pids);
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGINT) << "dies of the signal";
  EXPECT_LT(SecondsSince(start), 5);
  std::istringstream in(ReadText(pids));
  pid_t shell = 0, child = 0;
  in >> shell >> child;
  ASSERT_GT(shell, 0);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(EndsWithin(shell, 2)) << "the command is gone";
  EXPECT_TRUE(EndsWithin(child, 2)) << "its child is gone";
  for (pid_t p : {shell, child})
    if (Running(p)) ::kill(p, SIGKILL);
}

// A closed terminal (SIGHUP) stops the command as it stops ninja; benchmake,
// killed by it, used to leave the command running.
TEST(SubprocessRunnerTest, HangupIsForwardedLikeAnInterrupt) {
  const std::string pid_file = PrivateTempPath("hangup.pid");
  int wstatus =
      InterruptWhileRunning(Sh("echo $$ > " + pid_file + "; exec sleep 30"), pid_file, SIGHUP);
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGHUP) << "dies of the signal";
  pid_t command = PidWrittenTo(pid_file);
  ASSERT_GT(command, 0);
  EXPECT_TRUE(EndsWithin(command, 2)) << "the command is gone";
  if (Running(command)) ::kill(command, SIGKILL);
}

// Under nohup (SIGHUP ignored) a hangup changes nothing, for benchmake and
// for its commands.
TEST(SubprocessRunnerTest, AnIgnoredHangupStaysIgnored) {
  const std::string pid_file = PrivateTempPath("nohup.pid");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGHUP, SIG_IGN);
    SubprocessRunner runner;
    Result<CommandResult> r = runner.Run(Sh("echo $$ > " + pid_file + "; sleep 0.5"));
    ::_exit(r.ok() && r->success() ? 0 : 1);
  }
  pid_t command = PidWrittenTo(pid_file);
  ::kill(pid, SIGHUP);
  ::kill(command, SIGHUP);  // a hangup reaches the whole session
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "the command ran to its end";
}

}  // namespace
}  // namespace bm
