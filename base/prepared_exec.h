// A command made ready to run where nothing may be allocated: in a signal
// handler (base/interrupt_forwarding.h runs Command::on_interrupt when
// benchmake is interrupted) and in a forked child of a multithreaded process
// that never execs (the guardian, base/guardian.h, runs it when benchmake has
// died). Everything is built before; RunPreparedExec uses only
// async-signal-safe calls (fork, sigprocmask, execve, waitpid, nanosleep,
// clock_gettime, _exit). Internal to SubprocessRunner.
#pragma once

#include <signal.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/command_runner.h"

namespace bm {

// Every string and pointer array execve needs, built before.
struct PreparedExec {
  std::string path;
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
};

// `cmd.on_interrupt` made ready, with the command's environment (null when it
// has none); argv[0] is looked up on PATH now.
std::unique_ptr<PreparedExec> PrepareExec(const Command& cmd);

// Our environment with `extra` added or overriding, as NAME=VALUE strings.
std::vector<std::string> MergedEnvironment(const std::map<std::string, std::string>& extra);

// Forks and execs `p`, with the signal mask `mask` (null: the caller's, kept
// through exec) and SIGINT, SIGTERM and SIGHUP at their default unless
// ignored, and waits for it: at most `timeout_ms` (< 0: until it ends).
// True once it has ended and been reaped; false when it could not be forked,
// or is still running at the timeout (then it is left running, unreaped: the
// caller kills it). Async-signal-safe.
bool RunPreparedExec(const PreparedExec& p, const sigset_t* mask, int timeout_ms);

}  // namespace bm
