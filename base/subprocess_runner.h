// SubprocessRunner: the real CommandRunner (fork + execvpe).
//
// The child runs in its own process group; a timeout sends SIGTERM to the
// group, then SIGKILL after 5 s. While a command runs, SIGINT and SIGTERM sent
// to benchmake are forwarded to the child's group. Output: appended to
// Command::log_path (stdout and stderr together), copied to our stderr as well
// when echo_to_terminal; with no log_path the child inherits our stdio.
// A program that cannot be started (exec failed) is a kNotFound/kIo Status.
//
// Thread safety: Run() may be called from several threads.
#pragma once

#include "base/command_runner.h"

namespace bm {

class SubprocessRunner : public CommandRunner {
 public:
  Result<CommandResult> Run(const Command& command) override;
};

}  // namespace bm
