// SubprocessRunner: the real CommandRunner (fork + execvpe).
//
// Each child runs in its own process group; a timeout sends SIGTERM to the
// group, then SIGKILL after 5 s (RunGroup: after GroupOptions::grace_seconds).
// While commands run, SIGINT, SIGTERM and SIGHUP (unless ignored: nohup)
// sent to benchmake are forwarded to their groups, then each running
// command's Command::on_interrupt is run and waited for, then each command has
// its interrupt_grace_seconds to end, after which what is left of its group is
// SIGKILLed (at once when the command itself has ended), and only then does
// benchmake die of the signal. Output: appended to Command::log_path (stdout
// and stderr together), copied to our stderr as well when echo_to_terminal;
// with no log_path the child inherits our stdio. A program that cannot be
// started (exec failed) is a kNotFound/kIo Status.
//
// Every command runs under a guardian (base/guardian.h): a process of its own
// between benchmake and the command, the subreaper of the command's tree,
// that dies with the thread that started it. So what the command leaves
// running when it ends, in its process group or not (setsid, a daemon), is
// stopped (SIGTERM, SIGKILL after interrupt_grace_seconds) before
// Run/RunGroup return and the command's log says so; a timeout, a failed peer
// or an interrupt SIGKILLs the whole tree once the grace is over; and a
// `benchmake step` killed with SIGKILL leaves nothing of it running on GPUs it
// no longer holds, its guardian having run the command's on_interrupt first
// (the Slurm job of a srun is cancelled); a `benchmake build` killed so has
// its ninja interrupted (Command::interrupt_when_orphaned). It costs one more
// fork per command.
// The group is polled (waitpid WNOHANG, the guardians' reports) every 20 ms at
// most, so a failure is noticed within about that.
//
// Thread safety: Run() and RunGroup() may be called from several threads.
#pragma once

#include "base/command_runner.h"

namespace bm {

// The absolute path of `program` on $PATH (as execvp finds it), or kNotFound.
Result<std::string> FindOnPath(const std::string& program);

class SubprocessRunner : public CommandRunner {
 public:
  Result<CommandResult> Run(const Command& command) override;
  Result<GroupResult> RunGroup(const std::vector<Command>& commands,
                               const GroupOptions& options) override;
};

}  // namespace bm
