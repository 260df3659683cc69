// The `benchmake` command registry. Each command is a table (CommandSpec,
// base/cli/flag_table.h: its operands, flags with help and defaults,
// description, examples) and the function that runs it:
//
//   bm::Status Fn(const ParsedArgs& args);
//
// Dispatch() reads the flags through the table, answers --help/-h itself,
// checks the operand count, then calls the function. The function prints its
// own output to stdout and returns a Status; main() prints a failed Status as
// "benchmake: error: MESSAGE" and exits with Status::ExitCode() (0 ok,
// 1 failure, 2 bad input). Nothing below main calls exit().
//
// Adding a command (e.g. `report`): write its CommandSpec beside the code that
// reads its flags (engine/report/report_args.cc: ReportSpec()), its function,
// and add one line to the list in commands.cc. Help, completion and the man
// page follow from the table. A two-word name ("cache gc") makes its first
// word a group: `benchmake cache --help` lists the group's commands.
// To reach the workspace, use OpenWorkspaceFromFlags() (cli/flags.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/cli/flag_table.h"
#include "base/result.h"
#include "base/terminal.h"

namespace bm::cli {

using CommandFn = Status (*)(const ParsedArgs& args);

struct Command {
  const CommandSpec* spec;
  CommandFn run;
};

// Every command, in the order `benchmake help` lists them (hidden ones too).
const std::vector<Command>& Commands();
// The specs of Commands(), hidden ones left out when `visible_only`.
std::vector<const CommandSpec*> CommandSpecs(bool visible_only);

// The flags `benchmake` takes before a command name: --version and
// --debug-key TARGET (an alias of `benchmake debug-key TARGET`), besides the
// common ones.
const CommandSpec& TopLevelSpec();

// argv without the program name. Sets *color as soon as --color (or its
// absence) is known, for main's error message.
Status Dispatch(const std::vector<std::string>& args, ColorMode* color);

// The built-in commands (cli/*_command.cc) and their tables.
const CommandSpec& BuildSpec();
Status BuildCommand(const ParsedArgs& args);
const CommandSpec& StepSpec();
Status StepCommand(const ParsedArgs& args);
const CommandSpec& ExplainSpec();
Status ExplainCommand(const ParsedArgs& args);
const CommandSpec& DebugKeySpec();
Status DebugKeyCommand(const ParsedArgs& args);
const CommandSpec& StatusSpec();
Status StatusCommand(const ParsedArgs& args);
const CommandSpec& GraphSpec();
Status GraphCommand(const ParsedArgs& args);
const CommandSpec& CleanSpec();
Status CleanCommand(const ParsedArgs& args);
const CommandSpec& CacheStatsSpec();
Status CacheStatsCommand(const ParsedArgs& args);
const CommandSpec& CacheVerifySpec();
Status CacheVerifyCommand(const ParsedArgs& args);
const CommandSpec& CacheGcSpec();
Status CacheGcCommand(const ParsedArgs& args);
// cli/cache_remote_command.cc
const CommandSpec& CachePushSpec();
Status CachePushCommand(const ParsedArgs& args);
const CommandSpec& CachePullSpec();
Status CachePullCommand(const ParsedArgs& args);
// cli/report_command.cc (tables and parsing in engine/report/report_args.h).
Status ReportCommand(const ParsedArgs& args);
Status CompareCommand(const ParsedArgs& args);
// cli/completion_command.cc
const CommandSpec& CompletionSpec();
Status CompletionCommand(const ParsedArgs& args);
// `benchmake __complete WORD...` (hidden; the shell scripts call it; not parsed
// through a table: its operands are another command line).
Status CompleteCommand(const std::vector<std::string>& words);
// cli/man_page.cc: `benchmake __man` (hidden) prints benchmake.1.
const CommandSpec& ManSpec();
Status ManCommand(const ParsedArgs& args);

}  // namespace bm::cli
