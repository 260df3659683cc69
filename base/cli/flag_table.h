// The command-line tables of `benchmake`: one CommandSpec per command, written
// beside the code that reads its flags, feeds everything a user sees of the command —
// the parser (ParseArgs), `benchmake COMMAND --help` (help.h), the shell
// completion (completion.h) and the man page (man_page.h) — so that a flag
// cannot exist without its help text, nor the help text drift from the parser.
//
//   const CommandSpec& BuildSpec() {
//     static const CommandSpec kSpec{
//         .name = "build", .operands = "[TARGET...]", .operand_kind = ValueKind::kTarget,
//         .summary = "bring targets up to date",
//         .description = "...",
//         .flags = {{.name = "--jobs", .short_name = "-j", .value_name = "N",
//                    .kind = ValueKind::kNumber, .help = "...", .default_text = "..."}},
//         .examples = {{"benchmake build -j 2 pretrain", "..."}}};
//     return kSpec;
//   }
//
// Syntax accepted by ParseArgs, like git's and cargo's: `--name VALUE`,
// `--name=VALUE`, `-x VALUE`, `-xVALUE`; switches take no value; `--` ends the
// flags; a lone `-` is an operand (stdin). Every command also takes the common
// flags (CommonFlags(): -C DIR, -f FILE, --color WHEN, -h/--help), anywhere.
// The last occurrence of a flag wins.
//
// This library (bm_cli_flags) depends on base/ only, so that the modules that
// own a command's logic (rules/tokenize_command.cc, engine/report/) can keep
// its table beside their parsing; cli/commands.cc pairs each table
// with the function that runs it.
//
// Thread safety: specs are immutable after construction; ParsedArgs is a value.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/terminal.h"

namespace bm::cli {

// What a value is — a flag's or an operand's: how it completes in a shell and
// how the help names it.
enum class ValueKind {
  kNone,     // a switch (flags) / no operands (commands)
  kText,     // free text: no completion
  kNumber,   // a number: no completion
  kFile,     // a path: the shell completes file names
  kDir,      // a directory: the shell completes directory names
  kTarget,   // a target of the workspace's BENCHFILE
  kChoice,   // one of `choices`
  kCommand,  // a benchmake command (`benchmake help COMMAND`)
};

struct FlagSpec {
  std::string_view name{};        // "--jobs"; or a short-only flag: "-n"
  std::string_view short_name{};  // "-j", or ""
  std::string_view value_name{};  // "N"; "" for a switch
  ValueKind kind = ValueKind::kNone;
  std::string_view help{};                  // one sentence, no final period
  std::string default_text{};               // "1", "stdout"; "" when there is none (or a switch)
  std::vector<std::string_view> choices{};  // kChoice: every accepted value

  bool takes_value() const { return !value_name.empty(); }
};

struct Example {
  std::string_view command{};  // "benchmake build -j 2 pretrain"
  std::string_view what{};     // "build pretrain and what it needs, two steps at a time"
};

struct CommandSpec {
  std::string_view name{};      // "build", or two words: "cache gc"
  std::string_view operands{};  // the synopsis after the flags: "[TARGET...]"; "" for none
  ValueKind operand_kind = ValueKind::kNone;
  std::vector<std::string_view> operand_choices{};  // operand_kind == kChoice
  int min_operands = 0;
  int max_operands = 0;           // -1: any number
  std::string_view summary{};     // one line for `benchmake help`
  std::string description{};      // paragraphs separated by blank lines
  std::vector<FlagSpec> flags{};  // the command's own; the common ones are added
  std::vector<Example> examples{};
  bool hidden = false;  // internal: not listed by help, completion or the man page
};

// -C DIR, -f FILE, --color WHEN, -h/--help: taken by every command.
const std::vector<FlagSpec>& CommonFlags();

// The arguments of one command, as the table read them.
class ParsedArgs {
 public:
  // Whether `flag` (its `name` in the table) was given.
  bool Has(std::string_view flag) const { return values_.count(flag) > 0; }
  // Its value (the last one given), or nullopt.
  std::optional<std::string> Value(std::string_view flag) const;
  // Its value, or `fallback` when not given.
  std::string ValueOr(std::string_view flag, std::string_view fallback) const;
  const std::vector<std::string>& operands() const { return operands_; }

  // The common flags.
  std::string dir() const { return ValueOr("--directory", ""); }
  std::string file() const { return ValueOr("--file", ""); }
  // --color WHEN, else $BENCHMAKE_COLOR, else auto (base/terminal.h).
  ColorMode color() const;
  bool help() const { return Has("--help"); }

  // For ParseArgs and tests.
  void Set(std::string_view flag, std::string value);
  void AddOperand(std::string operand) { operands_.push_back(std::move(operand)); }

 private:
  std::map<std::string, std::string, std::less<>> values_;  // a switch maps to ""
  std::vector<std::string> operands_;
};

// The flag of `spec` or of CommonFlags() spelled `word` ("--jobs", "-j"), or null.
const FlagSpec* FindFlag(const CommandSpec& spec, std::string_view word);

// Every name and short name of spec.flags and CommonFlags(), in table order.
std::vector<std::string> FlagNames(const CommandSpec& spec);

// Reads `args` (the words after the command's name) against spec.flags and
// CommonFlags(), on top of `base` (flags given before the command's name).
// Errors (kInvalidArgument), each naming the command and pointing to its help:
// an unknown flag (with the nearest known one), a missing value, a value given
// to a switch, a value outside a flag's choices. Operand counts are checked
// separately (CheckOperands), so that `--help` works with any operands.
Result<ParsedArgs> ParseArgs(const CommandSpec& spec, const std::vector<std::string>& args,
                             const ParsedArgs& base = ParsedArgs());

// kInvalidArgument with the usage line when the operands are too few or too many.
Status CheckOperands(const CommandSpec& spec, const ParsedArgs& args);

// ParseArgs then CheckOperands: what tests and in-process callers use.
Result<ParsedArgs> ParseCommandLine(const CommandSpec& spec, const std::vector<std::string>& args);

// "usage: benchmake build [OPTIONS] [TARGET...]".
std::string UsageLine(const CommandSpec& spec);

// Parses a non-negative integer flag value.
Result<int> ParseIntFlag(std::string_view flag, std::string_view value);

}  // namespace bm::cli
