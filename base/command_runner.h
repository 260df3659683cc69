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

struct Command {
  std::vector<std::string> argv;           // argv[0] is looked up on PATH when it has no '/'
  std::string cwd;                         // empty: the caller's
  std::map<std::string, std::string> env;  // added to (or overriding) the caller's environment
  std::string log_path;                    // stdout+stderr appended here; empty: inherit
  bool echo_to_terminal = false;           // with log_path: also copy output to our stderr
  std::optional<double> timeout_seconds;   // killed (SIGTERM, then SIGKILL) past this
};

struct CommandResult {
  int exit_code = 0;    // valid when term_signal == 0
  int term_signal = 0;  // the signal that ended the process, 0 if it exited
  bool timed_out = false;

  bool success() const { return exit_code == 0 && term_signal == 0 && !timed_out; }
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;

  // Runs the command to completion. A Status error means it could not be
  // started (no such program, fork failed); a command that ran and failed is
  // an OK Result with !success(). Thread-safe in implementations.
  virtual Result<CommandResult> Run(const Command& command) = 0;
};

}  // namespace bm
