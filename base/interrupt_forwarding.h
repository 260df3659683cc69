// How SubprocessRunner (base/subprocess_runner.h) passes benchmake's
// interrupts on to the commands it runs: SIGINT, SIGTERM and SIGHUP (unless
// ignored: nohup) go to each running command's process group, then each
// command's Command::on_interrupt runs and is waited for, then each command
// has its interrupt_grace_seconds to end, after which what is left of it is
// SIGKILLed (its group; with a guardian, base/guardian.h, its whole tree), and
// only then does benchmake die of the signal. Internal to SubprocessRunner.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/command_runner.h"

namespace bm {

// A Command::on_interrupt made ready for execve in a signal handler: every
// string and pointer array built before, nothing allocated after.
struct PreparedExec {
  std::string path;
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
};
// `cmd.on_interrupt` made ready (null when it has none); argv[0] is looked
// up on PATH now.
std::unique_ptr<PreparedExec> PrepareExec(const Command& cmd);

// Our environment with `extra` added or overriding, as NAME=VALUE strings.
std::vector<std::string> MergedEnvironment(const std::map<std::string, std::string>& extra);

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
