// The help texts of `benchmake`, rendered from the command tables
// (flag_table.h): `benchmake --help`, `benchmake COMMAND --help` and
// `benchmake help [COMMAND]`, `benchmake GROUP --help` for two-word commands.
// Lines are wrapped at 80 columns.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/cli/flag_table.h"

namespace bm::cli {

// "-j, --jobs N", "    --remeasure", "-n" (short names aligned in a column).
std::string FlagSynopsis(const FlagSpec& flag);

// What `--help` prints for one command: usage, description, its flags with
// their defaults, the common flags, examples.
std::string CommandHelp(const CommandSpec& spec);

// `benchmake --help`: usage, every visible command with its summary, the
// top-level and common flags.
std::string GeneralHelp(const std::vector<const CommandSpec*>& specs, const CommandSpec& top);

// The commands whose name starts with "GROUP " ("cache" → cache stats, ...).
std::vector<const CommandSpec*> GroupMembers(std::string_view group,
                                             const std::vector<const CommandSpec*>& specs);
// Whether `word` names a group of commands rather than a command.
bool IsGroup(std::string_view word, const std::vector<const CommandSpec*>& specs);
// What may come first after `benchmake`: each command's first word, a group's once.
std::vector<std::string> FirstWords(const std::vector<const CommandSpec*>& specs);
// `benchmake cache --help`: the group's commands with their summaries.
std::string GroupHelp(std::string_view group, const std::vector<const CommandSpec*>& specs);

// `text` (paragraphs separated by blank lines) wrapped at `width` columns,
// every line indented by `indent` spaces.
std::string Wrap(std::string_view text, size_t width, size_t indent);

}  // namespace bm::cli
