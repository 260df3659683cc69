#include "base/terminal.h"

#include <unistd.h>

#include <cstdlib>

namespace bm {

Result<ColorMode> ParseColorMode(std::string_view text) {
  if (text == "auto") return ColorMode::kAuto;
  if (text == "always") return ColorMode::kAlways;
  if (text == "never") return ColorMode::kNever;
  return Errorf(ErrorCode::kInvalidArgument, "--color wants auto, always or never, not '{}'", text);
}

std::string_view ColorModeName(ColorMode mode) {
  switch (mode) {
    case ColorMode::kAlways:
      return "always";
    case ColorMode::kNever:
      return "never";
    case ColorMode::kAuto:
      break;
  }
  return "auto";
}

ColorMode ColorModeFromEnv() {
  const char* env = std::getenv(kColorEnv);
  if (env == nullptr) return ColorMode::kAuto;
  Result<ColorMode> mode = ParseColorMode(env);
  return mode.ok() ? *mode : ColorMode::kAuto;
}

bool UseColor(ColorMode mode, int fd) {
  if (mode != ColorMode::kAuto) return mode == ColorMode::kAlways;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return ::isatty(fd) == 1;
}

std::string Styled(std::string_view text, Style style, bool color) {
  if (!color) return std::string(text);
  const char* sgr = "1";  // bold
  switch (style) {
    case Style::kError:
      sgr = "1;31";  // bold red
      break;
    case Style::kWarning:
      sgr = "1;33";  // bold yellow
      break;
    case Style::kNote:
      sgr = "1;36";  // bold cyan
      break;
    case Style::kSuccess:
      sgr = "1;32";  // bold green
      break;
    case Style::kBold:
      break;
  }
  return std::string("\x1b[") + sgr + "m" + std::string(text) + "\x1b[0m";
}

}  // namespace bm
