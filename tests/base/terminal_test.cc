#include "base/terminal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

namespace bm {
namespace {

TEST(Terminal, ColorModes) {
  EXPECT_EQ(*ParseColorMode("always"), ColorMode::kAlways);
  EXPECT_EQ(ParseColorMode("sometimes").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ColorModeName(ColorMode::kNever), "never");
  ::setenv(kColorEnv, "never", 1);
  EXPECT_EQ(ColorModeFromEnv(), ColorMode::kNever);
  ::setenv(kColorEnv, "bogus", 1);
  EXPECT_EQ(ColorModeFromEnv(), ColorMode::kAuto);
  ::unsetenv(kColorEnv);
  EXPECT_EQ(ColorModeFromEnv(), ColorMode::kAuto);
}

TEST(Terminal, TheFlagWinsThenNoColorThenTheTerminal) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::unsetenv("NO_COLOR");
  EXPECT_FALSE(UseColor(ColorMode::kAuto, pipe_fds[1]));  // not a terminal
  EXPECT_TRUE(UseColor(ColorMode::kAlways, pipe_fds[1]));
  EXPECT_FALSE(UseColor(ColorMode::kNever, pipe_fds[1]));
  ::setenv("NO_COLOR", "1", 1);
  EXPECT_TRUE(UseColor(ColorMode::kAlways, pipe_fds[1]));  // a flag beats NO_COLOR
  ::unsetenv("NO_COLOR");
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST(Terminal, StyledWrapsInSgrCodesOnlyWhenColored) {
  EXPECT_EQ(Styled("error:", Style::kError, false), "error:");
  EXPECT_EQ(Styled("error:", Style::kError, true), "\x1b[1;31merror:\x1b[0m");
  EXPECT_EQ(Styled("a", Style::kBold, true), "\x1b[1ma\x1b[0m");
}

}  // namespace
}  // namespace bm
