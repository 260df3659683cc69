// Shell completion, from the command tables (flag_table.h).
//
// The scripts (`benchmake completion bash|zsh`) are thin: on <TAB> they call
//
//   benchmake __complete WORD...
//
// with the command line's words after "benchmake" up to the cursor (the last
// one is the word being completed, "" at a new word) and offer what it prints,
// one candidate per line: commands, a group's commands, flags, a flag's
// choices, the target names of the workspace's BENCHFILE (read by the parser
// alone: no hashing, no ninja), or the single line ":files" / ":dirs" asking
// the shell to complete paths itself. A word "--flag=PART" completes to
// "--flag=VALUE" (the bash script strips what bash treats as a separate word).
//
// Thread safety: pure functions (the target lister is the caller's).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/cli/flag_table.h"

namespace bm::cli {

inline constexpr std::string_view kCompleteFiles = ":files";
inline constexpr std::string_view kCompleteDirs = ":dirs";

// The target names of the workspace that the common flags in `args` name
// (-C DIR, -f FILE); empty when there is none or it does not parse.
using TargetLister = std::function<std::vector<std::string>(const ParsedArgs& args)>;

// The candidates for the last of `words`, each starting with it, in table
// order; kCompleteFiles or kCompleteDirs alone for paths.
std::vector<std::string> Complete(const std::vector<std::string>& words,
                                  const std::vector<const CommandSpec*>& specs,
                                  const CommandSpec& top, const TargetLister& targets);

// The scripts `benchmake completion bash|zsh` prints.
std::string BashCompletionScript();
std::string ZshCompletionScript();

}  // namespace bm::cli
