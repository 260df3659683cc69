// The `benchmake` command table. Each subcommand is one function
//
//   bm::Status Fn(const std::vector<std::string>& args);
//
// receiving the arguments after its name (global flags such as -C DIR and
// -f FILE given before the subcommand are appended to them). It prints its own
// output to stdout and returns a Status; main() prints a failed Status as
// "benchmake: error: MESSAGE" and exits with Status::ExitCode()
// (0 ok, 1 failure, 2 bad input). Nothing below main calls exit().
//
// Adding a subcommand (e.g. `report`): declare its function in your module's
// header and add one line to the table in commands.cc:
//   {"report", "report [--format md|json|csv|html]", "tables of the metrics",
//   &report::ReportCommand},
// To reach the workspace, use ParseCommonFlags() and OpenWorkspaceFromFlags()
// (engine/cli/flags.h) and engine::LoadResults() (engine/results.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace bm::engine::cli {

using CommandFn = Status (*)(const std::vector<std::string>& args);

struct CommandEntry {
  std::string_view name;
  std::string_view usage;    // "build [TARGET...] [-j N] [-k N] [-n]"
  std::string_view summary;  // one line for `benchmake help`
  CommandFn fn;
};

const std::vector<CommandEntry>& Commands();

// argv without the program name. Handles `help`, `--help`, `--version` and
// `--debug-key TARGET` itself.
Status Dispatch(const std::vector<std::string>& args);

// The built-in commands (engine/cli/*_command.cc).
Status BuildCommand(const std::vector<std::string>& args);
Status StepCommand(const std::vector<std::string>& args);
Status ExplainCommand(const std::vector<std::string>& args);
Status DebugKeyCommand(const std::vector<std::string>& args);
Status StatusCommand(const std::vector<std::string>& args);
Status GraphCommand(const std::vector<std::string>& args);
Status CleanCommand(const std::vector<std::string>& args);
Status CacheCommand(const std::vector<std::string>& args);
// engine/cli/report_command.cc (logic in engine/report/, docs/REPORTS.md).
Status ReportCommand(const std::vector<std::string>& args);
Status CompareCommand(const std::vector<std::string>& args);

}  // namespace bm::engine::cli
