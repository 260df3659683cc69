// The guardian: a process between benchmake and one command, that owns the
// command's whole process tree. SubprocessRunner (base/subprocess_runner.h)
// forks it for every contained command (Command::contain).
//
//   benchmake ── guardian (own process group; subreaper; dies-with benchmake)
//                   └─ command (own process group) ── its children, setsid or not
//
// - It is the child subreaper (PR_SET_CHILD_SUBREAPER) of the command's tree:
//   a process whose parent dies is reparented to it, not to init, so nothing
//   the command starts leaves the tree: a `setsid` daemon, a double fork, a
//   shell's background job, torchrun's workers.
// - The command ended, what it left running gets SIGTERM, and SIGKILL
//   `leftover_grace_ms` later; the guardian reports the command's wait status
//   only once no process of the tree is left (Bazel's process-wrapper kills
//   them at once; systemd's KillMode=control-group sends SIGTERM, then
//   SIGKILL after a timeout, as here).
// - What ignores SIGKILL for 10 s (a setuid program, which it may not signal;
//   a process stuck in the kernel) is given up on and reported (kAbandoned).
// - SIGTERM to the guardian means "stop everything now": every process of the
//   tree gets SIGKILL. It gets it from benchmake (a timeout's or an
//   interrupt's grace is over).
// - SIGHUP (kGuardianParentDeathSignal) means benchmake has died: the kernel
//   sends it when the thread that forked the guardian dies
//   (PR_SET_PDEATHSIG), and that thread waits for the guardian to end unless
//   its process dies (kill -9, the OOM killer, a crash). The guardian runs
//   the command's cancel command (`GuardianSpec::cancel`: Command::on_interrupt,
//   `scancel` of the Slurm job srun started, which a SIGKILLed srun cannot
//   release), waits for it for up to 10 s, and stops everything as on SIGTERM:
//   a `kill -9` of `benchmake step` leaves no process of its command running,
//   and no job of it in Slurm. With `interrupt_when_orphaned` (ninja under
//   `benchmake build`) it first sends the command's process group SIGTERM,
//   as benchmake's interrupt handler would have, then runs the cancel command,
//   and stops what is left only `leftover_grace_ms` later: ninja passes the
//   SIGTERM on to its steps, which stop their commands and cancel their jobs
//   themselves. It does not run the cancel command when
//   benchmake had stopped the tree itself (a SIGTERM came first: a timeout, a
//   failed peer, an interrupt's grace over), when the interrupt handler has
//   already run it (SIGUSR1, kGuardianCancelledSignal), or when the command
//   had ended.
// - It never execs (no binary to find), so everything it does after fork is
//   async-signal-safe: raw system calls, nothing allocated. The cancel
//   command is prepared (found on PATH, its argv and environment built)
//   before the fork, and started with fork and execve.
//
// Linux only; needs /proc to find the tree (base/process_tree.h).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>

#include "base/prepared_exec.h"

namespace bm {

// What the kernel sends the guardian when benchmake (the thread that forked
// it) dies: not SIGTERM, which benchmake sends to stop the tree itself.
constexpr int kGuardianParentDeathSignal = SIGHUP;
// What benchmake's interrupt handler sends each guardian once it has run the
// commands' on_interrupt: the guardian does not run its own again.
constexpr int kGuardianCancelledSignal = SIGUSR1;

// How to start a command, prepared before fork: nothing is allocated after.
struct ExecSpec {
  char* const* argv = nullptr;  // argv[0] is looked up on PATH when it has no '/'
  char* const* envp = nullptr;
  const char* cwd = nullptr;  // null: the caller's
  int out_fd = -1;            // becomes the command's stdout and stderr; -1: inherited
  sigset_t mask{};            // the signal mask the command starts with
  pid_t die_with = 0;         // > 0: the command is SIGKILLed when this parent dies
};

// In a forked child: puts it in a process group of its own and execs the
// command. Never returns; when the command cannot start (chdir or exec
// failed), writes that errno (an int) to `error_fd` and exits 127.
[[noreturn]] void ExecCommand(const ExecSpec& spec, int error_fd);

// One record of what a guardian tells the process that forked it, written
// whole to its report pipe (smaller than PIPE_BUF, so never split).
struct GuardianReport {
  enum Kind : int32_t { kStarted = 1, kExited = 2, kEnded = 3, kAbandoned = 4 };
  int32_t kind = 0;
  // kStarted: the command's pid, also its process group (0: fork failed).
  // kAbandoned (before kEnded): how many processes SIGKILL did not end in
  // 10 s (another user's, or stuck in the kernel); they were left running.
  // kExited (the command has ended, what it started may not have) and
  // kEnded (nothing of the tree is left): the command's wait status.
  int32_t value = 0;
  // kStarted: the errno of a failed start, 0 when the command runs.
  // kEnded: how many processes the command left running when it ended by
  // itself (they were stopped).
  int32_t extra = 0;
};

struct GuardianSpec {
  ExecSpec exec;
  pid_t parent = 0;           // the process that forked the guardian
  int report_fd = -1;         // write end of the report pipe
  int leftover_grace_ms = 0;  // leftovers: SIGTERM, then SIGKILL this long after
  // Run when `parent` dies while the command runs (Command::on_interrupt);
  // null: nothing. Prepared before the fork: the guardian reads its copy.
  const PreparedExec* cancel = nullptr;
  // `parent` dead, the command is interrupted (SIGTERM) and given
  // `leftover_grace_ms` rather than killed at once
  // (Command::interrupt_when_orphaned).
  bool interrupt_when_orphaned = false;
};

// In a child forked from `spec.parent`: becomes the command's guardian. Writes
// kStarted once the command has started (or failed to), kExited as soon as it
// has ended, then kEnded once every process it started has ended too, and
// exits 0. When `spec.parent` dies while the command runs, runs `spec.cancel`
// first (above). Never returns.
[[noreturn]] void RunGuardian(const GuardianSpec& spec);

}  // namespace bm
