// How SubprocessRunner (base/subprocess_runner.h) passes benchmake's
// interrupts on to the commands it runs: SIGINT, SIGTERM and SIGHUP (unless
// ignored: nohup) go to each running command's process group, then each
// command's Command::on_interrupt runs and is waited for (and each guardian,
// base/guardian.h, is told so: it does not run its command's again should
// benchmake be killed in what follows), then each command has its
// interrupt_grace_seconds to end, after which what is left of it is SIGKILLed
// (its group; with a guardian, its whole tree), and only then does benchmake
// die of the signal. Internal to SubprocessRunner.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <vector>

#include "base/prepared_exec.h"

namespace bm {

// While alive: SIGINT, SIGTERM and SIGHUP sent to benchmake are forwarded to
// the groups added. The first scope installs the handler, the last restores
// the previous one (several threads may run commands at once). SIGHUP (the
// terminal closed) stops the commands as it stops ninja, unless benchmake was
// told to ignore it (nohup): killed by it, benchmake left them running.
// Thread-safe: a fixed table of slots that the signal handler reads.
class ForwardingScope {
 public:
  ForwardingScope();
  ~ForwardingScope();
  ForwardingScope(const ForwardingScope&) = delete;
  ForwardingScope& operator=(const ForwardingScope&) = delete;

  // A running command: its process group, its guardian (0: none) and its
  // Command::interrupt_grace_seconds. One beyond the table still runs; it
  // just misses the forwarded signal.
  void Add(pid_t group, pid_t guardian, double grace_seconds);
  // `cancel` (kept alive by the caller for the scope's life) runs when a
  // signal is forwarded.
  void AddCancel(const PreparedExec* cancel);

 private:
  std::vector<std::atomic<pid_t>*> slots_;
  std::vector<std::atomic<const PreparedExec*>*> cancel_slots_;
};

}  // namespace bm
