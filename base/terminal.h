// When benchmake colors its output, and how: one decision for the error
// messages of `benchmake`, the live progress lines and notices of the steps.
//
//   --color never   plain
//   --color always  colored, even into a pipe or a file
//   --color auto    (default) colored when the stream is a terminal, TERM is
//                   not "dumb" and NO_COLOR is unset or empty (no-color.org)
// A flag given on the command line wins over NO_COLOR, as the convention asks.
// `benchmake build` decides once for its own stdout and hands the verdict to
// the steps ninja runs as BENCHMAKE_COLOR=always|never (kColorEnv), so a step
// writing into ninja's pipe colors exactly when the build's terminal does.
//
// Thread safety: pure functions over the environment.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace bm {

enum class ColorMode { kAuto, kAlways, kNever };

inline constexpr const char* kColorEnv = "BENCHMAKE_COLOR";

// "auto", "always", "never"; kInvalidArgument otherwise.
Result<ColorMode> ParseColorMode(std::string_view text);
std::string_view ColorModeName(ColorMode mode);

// $BENCHMAKE_COLOR when it names a mode, else kAuto.
ColorMode ColorModeFromEnv();

// Whether to color what is written to file descriptor `fd` under `mode`.
bool UseColor(ColorMode mode, int fd);

// SGR styles used by benchmake's messages.
enum class Style { kBold, kError, kWarning, kNote, kSuccess };

// `text` wrapped in the style's escape codes when `color`, else `text`.
std::string Styled(std::string_view text, Style style, bool color);

}  // namespace bm
