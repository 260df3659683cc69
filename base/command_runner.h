// CommandRunner: how benchmake launches processes (steps' commands, the
// trainer, ninja). An interface so that tests run whole build scenarios with a
// fake runner (tests/support/fake_command_runner.h) and no processes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace bm {

// Every process a command starts, in its process group or not (setsid, a
// double fork, a daemon), has ended when Run or RunGroup returns: those left
// running when the command ended get SIGTERM, then SIGKILL after
// interrupt_grace_seconds, and the command's log says so. All of them are
// stopped when benchmake dies, even of SIGKILL (interrupt_when_orphaned).
// SubprocessRunner does it with a guardian process (base/guardian.h).
struct Command {
  std::vector<std::string> argv;           // argv[0] is looked up on PATH when it has no '/'
  std::string cwd;                         // empty: the caller's
  std::map<std::string, std::string> env;  // added to (or overriding) the caller's environment
  std::string log_path;                    // stdout+stderr appended here; empty: inherit
  bool echo_to_terminal = false;           // with log_path: also copy output to our stderr
  std::optional<double> timeout_seconds;   // killed (SIGTERM, then SIGKILL) past this
  // Run when benchmake is interrupted (SIGINT, SIGTERM, SIGHUP) while this command
  // runs, and waited for, before the signal is forwarded to it and
  // benchmake dies: how work the command stands for elsewhere is cancelled
  // (`scancel` of the Slurm job a srun started). Also when benchmake dies of
  // SIGKILL (or a crash) while it runs: run by the command's guardian. Not
  // run when the command ends, or times out. Empty: nothing. argv[0] is
  // looked up on PATH when the command starts.
  std::vector<std::string> on_interrupt;
  // Interrupted, the command has this long to end after the forwarded signal;
  // then what is left of it (the command, when it ignores the signal; a
  // shell's background job, which ignores SIGINT; whatever it started in
  // another session) is SIGKILLed, so nothing it started outlives benchmake.
  // Also how long the processes a command leaves running when it ends get
  // between SIGTERM and SIGKILL.
  double interrupt_grace_seconds = 5;
  // What the command's guardian (base/guardian.h) does when benchmake dies of
  // SIGKILL (kill -9, the OOM killer, a crash) while the command runs. False:
  // it runs on_interrupt and SIGKILLs the command's whole tree at once, as
  // the GPUs the step held are free again the moment it dies
  // (engine/gpu_allocator.h). True: it interrupts the command as benchmake's
  // own interrupt would (SIGTERM to its process group, then on_interrupt),
  // and SIGKILLs what is left after interrupt_grace_seconds. For ninja under
  // `benchmake build`: ninja passes the SIGTERM to its steps, each of which
  // stops its command and cancels its Slurm job as on Ctrl-C, and the next
  // build does not find them still running.
  bool interrupt_when_orphaned = false;
};

struct CommandResult {
  int exit_code = 0;    // valid when term_signal == 0
  int term_signal = 0;  // the signal that ended the process, 0 if it exited
  bool timed_out = false;
  // RunGroup ended it because another member failed first; a member already
  // ended when that failure was seen failed (or succeeded) by itself.
  bool stopped = false;

  bool success() const { return exit_code == 0 && term_signal == 0 && !timed_out && !stopped; }
};

// How RunGroup stops the members still running once one has failed.
struct GroupOptions {
  double grace_seconds = 5;  // SIGTERM, then SIGKILL this long after
  // Once a member has exited successfully, a member still running this long
  // after is timed out (and fails the group): no member waits forever for a
  // peer that has left. Unset: members may end at any time apart.
  std::optional<double> straggler_seconds;
};

struct GroupResult {
  std::vector<CommandResult> results;  // one per command, in the order given
  // The member whose failure stopped the others (of several found failed at
  // one poll, the first in order); -1: all succeeded.
  int first_failure = -1;

  bool success() const { return first_failure < 0; }
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;

  // Runs the command to completion. A Status error means it could not be
  // started (no such program, fork failed); a command that ran and failed is
  // an OK Result with !success(). Thread-safe in implementations.
  virtual Result<CommandResult> Run(const Command& command) = 0;

  // Runs the commands concurrently, as one unit (the ranks of a training
  // step): the first member to fail (non-zero exit, a signal, its timeout)
  // stops the others, which get SIGTERM and, grace_seconds later, SIGKILL, so
  // the call returns within about grace_seconds of that failure. Each member
  // runs in its own process group (its children are stopped with it) and is
  // killed if this process dies. Returns when every member has ended. A Status
  // error means some member could not be started; the members already started
  // have then been killed and waited for. Thread-safe in implementations.
  virtual Result<GroupResult> RunGroup(const std::vector<Command>& commands,
                                       const GroupOptions& options) = 0;
};

}  // namespace bm
