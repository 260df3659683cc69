// benchmake.1, the man page, in roff (man(7) macros), rendered from the same
// command tables as the help (flag_table.h), plus the files, environment
// variables and exit codes. The build writes it with the hidden
// `benchmake __man` (cli/CMakeLists.txt) and `cmake --install` puts it
// in share/man/man1.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/cli/flag_table.h"

namespace bm::cli {

// The whole page for `version`, with the visible commands of `specs` in order.
std::string ManPage(const std::vector<const CommandSpec*>& specs, const CommandSpec& top,
                    std::string_view version);

// `text` safe as roff body text: backslashes escaped, '-' as \-, a leading
// '.' or '\'' protected, and every UTF-8 character as \[uXXXX], so the page is
// plain ASCII that groff reads without preconv.
std::string RoffEscape(std::string_view text);

}  // namespace bm::cli
